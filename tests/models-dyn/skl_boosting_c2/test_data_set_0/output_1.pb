BprobabilitiesJ8DTê>ÞÕ
?†í>ù<	?ÀÆ{>PA?í€G?Lüa>°ÝG?@‰`>ä‚l>GßD?Mñ<?f†>