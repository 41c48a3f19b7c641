/*
 * host_spin: a fixed amount of single-threaded work, for bench/host_halves.sh.
 * "cpu": integer arithmetic in registers (no memory traffic), using every unit of a core; "mem": passes over
 * a 256 MB array, read and written (memory bandwidth). Prints its seconds.
 *     host_spin cpu|mem
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

/*
 * eight independent chains of integer operations the compiler cannot fold: as
 * many at once as a core's units can take, so that two hyperthreads of one core
 * slow each other down (one chain would leave a sibling's units free)
 */
static uint64_t
spin_cpu(void)
{
	uint64_t	x[8];

	for (int k = 0; k < 8; k++)
		x[k] = 88172645463325252ULL + k;
	for (long i = 0; i < 300000000L; i++)
		for (int k = 0; k < 8; k++)
		{
			x[k] ^= x[k] << 13;
			x[k] ^= x[k] >> 7;
			x[k] ^= x[k] << 17;
		}
	return x[0] ^ x[1] ^ x[2] ^ x[3] ^ x[4] ^ x[5] ^ x[6] ^ x[7];
}

/* passes over a large array: each 8-byte word read, changed and written */
static uint64_t
spin_mem(void)
{
	size_t		n = (256u << 20) / sizeof(uint64_t);
	uint64_t   *a = malloc(n * sizeof(uint64_t));
	uint64_t	s = 0;

	if (a == NULL)
		return 0;
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
	double		t0 = now();
	uint64_t	r;

	if (argc != 2 || (strcmp(argv[1], "cpu") != 0 && strcmp(argv[1], "mem") != 0))
	{
		fprintf(stderr, "usage: host_spin cpu|mem\n");
		return 2;
	}
	r = strcmp(argv[1], "cpu") == 0 ? spin_cpu() : spin_mem();
	printf("%.3f %d\n", now() - t0, (int) (r & 1));
	return 0;
}
