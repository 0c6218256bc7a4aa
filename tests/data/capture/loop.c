/* loop.c - calls getppid() argv[1] times, then sleeps argv[2] seconds (default 0): a workload
 * with an exact number of syscalls. */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1;

	for (long i = 0; i < n; i++)
		getppid();
	if (argc > 2)
		sleep(atoi(argv[2]));
	return 0;
}
