/* alloc.h: pawl's own C allocations, through the program's allocator
 * (pawl_set_allocator) or libc's. Every layer of the library allocates
 * and frees with these, never with malloc/free directly, so that what one
 * allocates the other frees with the same allocator. Memory from SQLite,
 * libpq and LuaJIT's default allocator is theirs and freed their way. */
#ifndef PAWL_ALLOC_H
#define PAWL_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

#include "pawl.h"

void *pawl__malloc(size_t n);
void *pawl__calloc(size_t n, size_t size);
void *pawl__realloc(void *ptr, size_t n);
void pawl__free(void *ptr);
char *pawl__strdup(const char *s);
char *pawl__strndup(const char *s, size_t n);
int pawl__asprintf(char **out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int pawl__vasprintf(char **out, const char *fmt, va_list ap);

/* The program's allocator, or NULL (libc's). For Lua states: a
 * lua_Alloc over it (pawl__lua_alloc in lua/state.c). */
const pawl_allocator_t *pawl__allocator(void);

/* Open handles (pawl_open, pawl_close), so that the allocator is not
 * swapped under them. */
void pawl__alloc_handles(int delta);

#endif
