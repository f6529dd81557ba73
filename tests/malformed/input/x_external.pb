Bxj
locationok/x.pbp