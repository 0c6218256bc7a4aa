/* Probe target for tests/test_probe_args*.py and tests/test_prologue*.py: functions with
 * parameters in registers (-O2) or in the stack frame (-O0), structures behind pointers, small
 * signed types, a global, and two functions with identical signatures for de-duplication. */
#include <stdio.h>
#include <stdlib.h>

/* no inlining, cloning or constant propagation across calls: the probed functions keep the
 * signatures written here */
#if defined(__clang__)
#define KEEP __attribute__((noinline))
#else
#define KEEP __attribute__((noipa))
#endif

struct point {
	long x;
	int y;
	short z;
	unsigned char tag[4];
};

long counter = 1234567;

KEEP long add3(long a, long b, long c)
{
	__asm__ volatile("" ::: "memory");
	return a + 2 * b + 3 * c;
}

KEEP long add3_twin(long a, long b, long c)
{
	__asm__ volatile("" ::: "memory");
	return a - b + c;
}

KEEP int scaled(struct point *p, int scale)
{
	__asm__ volatile("" ::: "memory");
	return (int)(p->x * scale) + p->y + p->z + p->tag[2];
}

KEEP int narrow(signed char c, unsigned short u, int neg)
{
	__asm__ volatile("" ::: "memory");
	return c + u + neg;
}

/* -O2: `unused` gets no location, or only its entry value */
KEEP int ignores(int used, long unused)
{
	return used * 3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 0) : 3;
	struct point pt = { .x = 40 + n, .y = -5, .z = 9, .tag = { 1, 2, 77, 4 } };
	long r = add3(n, n + 1, n + 2) + add3_twin(10 * n, 10 * n + 1, 10 * n + 2);
	r += scaled(&pt, 2) + narrow(-7, 65000, (int)-n) + ignores(1, n);
	printf("%ld %ld\n", r, counter);
	return 0;
}
