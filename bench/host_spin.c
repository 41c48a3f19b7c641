/*
 * host_spin: a fixed amount of single-threaded work, for bench/host_halves.sh.
 * "cpu": eight chains of integer arithmetic in registers (no memory traffic),
 * as many at once as a core's units take; "chain": one such chain; "mem": passes over
 * a 256 MB array, read and written (memory bandwidth). Prints its seconds.
 *     host_spin cpu|chain|mem
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* seconds on the monotonic clock */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* one xorshift step of a chain */
#define STEP(x) ((x) ^= (x) << 13, (x) ^= (x) >> 7, (x) ^= (x) << 17)

/* one dependent chain of integer operations: a core's other units stay free */
static uint64_t
spin_chain(void)
{
	uint64_t	x = 88172645463325252ULL;

	for (long i = 0; i < 1000000000L; i++)
		STEP(x);
	return x;
}

/*
 * eight independent chains, each its own variable so that they stay in
 * registers: as many operations at once as a core's units take, so that two
 * hyperthreads of one core slow each other down
 */
static uint64_t
spin_cpu(void)
{
	uint64_t	a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;

	for (long i = 0; i < 500000000L; i++)
	{
		STEP(a);
		STEP(b);
		STEP(c);
		STEP(d);
		STEP(e);
		STEP(f);
		STEP(g);
		STEP(h);
	}
	return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

/* passes over a large array: each 8-byte word read, changed and written */
static uint64_t
spin_mem(void)
{
	size_t		n = (256u << 20) / sizeof(uint64_t);
	uint64_t   *a = malloc(n * sizeof(uint64_t));
	uint64_t	s = 0;

	if (a == NULL)
	{
		fprintf(stderr, "host_spin: out of memory\n");
		exit(1);
	}
	memset(a, 1, n * sizeof(uint64_t));
	for (int pass = 0; pass < 48; pass++)
		for (size_t i = 0; i < n; i++)
			s += (a[i] += i);
	free(a);
	return s;
}

int
main(int argc, char **argv)
{
	uint64_t	(*spin) (void) = NULL;
	double		t0;
	uint64_t	r;

	if (argc == 2 && strcmp(argv[1], "cpu") == 0)
		spin = spin_cpu;
	else if (argc == 2 && strcmp(argv[1], "chain") == 0)
		spin = spin_chain;
	else if (argc == 2 && strcmp(argv[1], "mem") == 0)
		spin = spin_mem;
	if (spin == NULL)
	{
		fprintf(stderr, "usage: host_spin cpu|chain|mem\n");
		return 2;
	}
	t0 = now();
	r = spin();
	printf("%.3f %d\n", now() - t0, (int) (r & 1));
	return 0;
}
