// SPDX-License-Identifier: GPL-2.0
/* target.c - the probed program (built -O2 -g by the tests): calls probed_add(i, 100) and
 * probed_mul(1000 + i, 3) for i = 1..N and getpid() N times, then prints the sum; given a second
 * argument, it also writes the sum to that file and waits for a signal. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__clang__)
#define PROBED __attribute__((noinline, used))
#else
#define PROBED __attribute__((noipa, used)) /* no inlining, cloning or constant propagation */
#endif

PROBED int probed_add(int a, int b)
{
	return a + b;
}

PROBED int probed_mul(int a, int b)
{
	return a * b;
}

/* an IFUNC: the symbol is the resolver choosing the implementation when the call is bound */
static int picked(void)
{
	return 1;
}

static int (*pick(void))(void)
{
	return picked;
}

int chosen(void) __attribute__((ifunc("pick")));

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	long sum = 0;

	for (int i = 1; i <= n; i++) {
		sum += probed_add(i, 100);
		sum += probed_mul(1000 + i, 3);
		sum += getpid() > 0;
		sum += chosen() - 1;
	}
	printf("%ld\n", sum);
	if (argc > 2) {
		FILE *done = fopen(argv[2], "w");

		if (!done)
			return 1;
		fprintf(done, "%ld\n", sum);
		fclose(done);
		pause();
	}
	return 0;
}
