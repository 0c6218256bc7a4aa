/* getppid.c - calls getppid() argv[1] times (the workload of the ring buffer tests). */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1;

	for (long i = 0; i < n; i++)
		getppid();
	return 0;
}
