/* two_threads.c - two threads, each pinned to a CPU of its own (the first two online ones), call
 * getppid() argv[1] times each, together: records of two CPUs' rings that interleave in time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static long calls;
static pthread_barrier_t start;

static void *run(void *arg)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)(long)arg, &set);
	sched_setaffinity(0, sizeof(set), &set);
	pthread_barrier_wait(&start);
	for (long i = 0; i < calls; i++)
		getppid();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[2];
	int cpus[2], found = 0;
	cpu_set_t online;

	calls = argc > 1 ? atol(argv[1]) : 1;
	sched_getaffinity(0, sizeof(online), &online);
	for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
		if (CPU_ISSET(cpu, &online))
			cpus[found++] = cpu;
	if (found < 2)
		cpus[1] = cpus[0];
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&threads[i], NULL, run, (void *)(long)cpus[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
