BprobabilitiesJT*¦?O­³:U22mô˜=^_?4ñ]=H=ñ:?M¶S>c3u?2½,=NºJ7Ÿ$=-Ëa?N¬=Q¹s?®^D=²C7
^f?îÌ=†—„8