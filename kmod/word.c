// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem words: reading and changing a naturally aligned 4- or 8-byte word
 * of a region from the kernel, through the direct map of its page. User
 * space changes the same words at any time, so every change here is one
 * atomic instruction or one store, never a loop a writer could keep
 * spinning.
 */
#include <linux/atomic.h>
#include <linux/mm.h>

#include "syncmem_core.h"

/*
 * The kernel address of the word at @offset: words are naturally aligned,
 * so one never straddles two pages, and region pages are never highmem.
 */
static void *syncmem_region_word(struct syncmem_region *r, u64 offset)
{
	return page_address(r->pages[offset >> PAGE_SHIFT]) +
	       offset_in_page(offset);
}

u64 syncmem_word_read(struct syncmem_region *r, u64 offset, u32 size)
{
	void *p = syncmem_region_word(r, offset);

	return size == 4 ? READ_ONCE(*(u32 *)p) : READ_ONCE(*(u64 *)p);
}

void syncmem_word_write(struct syncmem_region *r, u64 offset, u32 size,
			u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		WRITE_ONCE(*(u32 *)p, (u32)value);
	else
		WRITE_ONCE(*(u64 *)p, value);
}

/*
 * Add @value to the word with one atomic instruction: user space may change
 * the word meanwhile, and a loop could be kept spinning by whoever does.
 */
void syncmem_word_add(struct syncmem_region *r, u64 offset, u32 size,
		      u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		atomic_add((int)(u32)value, (atomic_t *)p);
	else
		atomic64_add((s64)value, (atomic64_t *)p);
}

/*
 * syncmem_word_add_return - add to a word (wrapping), atomically
 * @r:		The region (a reference is held by the caller).
 * @offset:	The word, validated with syncmem_word_check().
 * @size:	4 or 8.
 * @value:	What to add (the low 32 bits for a 4-byte word).
 *
 * Returns the word's new value. Takes no lock: callable under a spinlock.
 */
u64 syncmem_word_add_return(struct syncmem_region *r, u64 offset, u32 size, u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		return (u32)atomic_add_return((int)(u32)value, (atomic_t *)p);
	return (u64)atomic64_add_return((s64)value, (atomic64_t *)p);
}

/* Clear the top bit of the word, with one atomic instruction. */
void syncmem_word_clear_top(struct syncmem_region *r, u64 offset, u32 size)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		atomic_andnot((int)BIT(31), (atomic_t *)p);
	else
		atomic64_andnot((s64)BIT_ULL(63), (atomic64_t *)p);
}

/* Store @value if the word holds @expected, atomically; true if stored. */
bool syncmem_word_cmpxchg(struct syncmem_region *r, u64 offset,
			  u32 size, u64 expected, u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4) {
		u32 old = expected;

		return try_cmpxchg((u32 *)p, &old, (u32)value);
	}
	return try_cmpxchg((u64 *)p, &expected, value);
}

/*
 * A naturally aligned word of @size bytes wholly inside the region, and a
 * @value that fits it: 0 or -EINVAL.
 */
int syncmem_word_check(struct syncmem_region *r, u64 offset, u32 size,
		       u64 value)
{
	if (size != 4 && size != 8)
		return -EINVAL;
	if (size == 4 && value > U32_MAX)
		return -EINVAL;
	if (offset & (size - 1))
		return -EINVAL;
	if (offset >= r->size || size > r->size - offset)
		return -EINVAL;
	return 0;
}
