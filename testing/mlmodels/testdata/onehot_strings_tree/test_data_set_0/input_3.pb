(BheightJ ,'CZ8CýC}2CTÄ0C‹m"CõúC÷$8C±>'CA<+C¬Ø)CNl#CÖoCÉ¸Cêu/C·ÂCl­ CÄ0&Cõ$8C!*7C#!C©(CMÔ"C¨:*CÙX!CˆC"z8Cÿ™$C†C"-C
C¿Ù6CñÑ0C0ð2CJT>CÛ2CÀ:$CÒ¿-CCzM0C