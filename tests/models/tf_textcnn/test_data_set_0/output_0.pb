B
Identity:0J ÷G„>µ+‚>úÍm>X¥‚>Êu†>D)~>çåi>Ÿ‚…>