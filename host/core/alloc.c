/* alloc.c: the allocator hook (pawl_set_allocator) and the wrappers every
 * layer allocates with (alloc.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set only while no handle is open (pawl_set_allocator refuses else), so
 * the threads of a host only ever read it. */
static pawl_allocator_t alloc_hook;
static int alloc_set;
static _Atomic int alloc_open;

int pawl_set_allocator(const pawl_allocator_t *a) {
  if (atomic_load(&alloc_open) > 0) return PAWL_EBUSY;
  if (a && (!a->malloc_fn || !a->realloc_fn || !a->free_fn))
    return PAWL_EINVAL;
  if (a) alloc_hook = *a;
  alloc_set = a != NULL;
  return 0;
}

const pawl_allocator_t *pawl__allocator(void) {
  return alloc_set ? &alloc_hook : NULL;
}

void pawl__alloc_handles(int delta) { atomic_fetch_add(&alloc_open, delta); }

void *pawl__malloc(size_t n) {
  if (alloc_set) return alloc_hook.malloc_fn(alloc_hook.ud, n ? n : 1);
  return malloc(n);
}

void *pawl__calloc(size_t n, size_t size) {
  if (!alloc_set) return calloc(n, size);
  if (size && n > SIZE_MAX / size) return NULL;
  size_t len = n * size;
  void *p = alloc_hook.malloc_fn(alloc_hook.ud, len ? len : 1);
  if (p) memset(p, 0, len);
  return p;
}

void *pawl__realloc(void *ptr, size_t n) {
  if (alloc_set) return alloc_hook.realloc_fn(alloc_hook.ud, ptr, n ? n : 1);
  return realloc(ptr, n);
}

void pawl__free(void *ptr) {
  if (!ptr) return;
  if (alloc_set)
    alloc_hook.free_fn(alloc_hook.ud, ptr);
  else
    free(ptr);
}

char *pawl__strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = pawl__malloc(len + 1);
  if (!d) return NULL;
  memcpy(d, s, len);
  d[len] = 0;
  return d;
}

char *pawl__strdup(const char *s) { return pawl__strndup(s, SIZE_MAX); }

int pawl__vasprintf(char **out, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return -1;
  char *s = pawl__malloc((size_t)n + 1);
  if (!s) return -1;
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  *out = s;
  return n;
}

int pawl__asprintf(char **out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = pawl__vasprintf(out, fmt, ap);
  va_end(ap);
  return n;
}
