// SPDX-License-Identifier: GPL-2.0
/*
 * Deterministic random numbers: xoshiro256** seeded through splitmix64, so
 * a master seed and a few labels (worker index, generation, thread) give
 * every thread of a run its own reproducible stream.
 */
#include "fuzz.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

bool rng_chance(struct rng *r, unsigned int num, unsigned int den)
{
	return rng_below(r, den) < num;
}

uint64_t seed_derive(uint64_t parent, uint64_t a, uint64_t b)
{
	uint64_t x = parent ^ (a * 0x9e3779b97f4a7c15ull);

	splitmix64(&x);
	x ^= b * 0xc2b2ae3d27d4eb4full;
	return splitmix64(&x);
}
