BprobabilitiesJDTê>ÞÕ
?†í>ù<	?¼Q>Q¸K?