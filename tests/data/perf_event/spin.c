/* spin.c - burns argv[1] milliseconds of CPU time (the workload of the perf_event program tests):
 * CPU time, not wall time, so that a busy machine does not starve it of the ticks it counts. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	struct timespec start, now;
	volatile unsigned long n = 0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
	do {
		for (int i = 0; i < 100000; i++)
			n++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	return 0;
}
