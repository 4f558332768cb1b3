/* bench/scriptcost: print one of lockd's scripts (enum script_id). */
#include <stdio.h>
#include <stdlib.h>

#include "scripts.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	fputs(script_body((enum script_id)atoi(argv[1])), stdout);
	return 0;
}
