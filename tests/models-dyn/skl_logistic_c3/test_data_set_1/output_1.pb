BprobabilitiesJ$(×D=O'Q?ü,
>ìñ>l?}g<µÇ??€>ÖûP: