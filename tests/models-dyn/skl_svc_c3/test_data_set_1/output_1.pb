BprobabilitiesJ$
5¾— ?S@Á?Ëb@¦‹‡¾ÅïN?´@pyl¾