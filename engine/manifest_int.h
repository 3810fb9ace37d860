/*
 * manifest_int.h: what the pieces of the manifest share (private to
 * engine/manifest*.c; the interface is manifest.h). manifest.c keeps
 * the entries; manifest_walk.c walks a source's tree; manifest_top.c
 * reads the sources' top-level names.
 */
#ifndef FERRY_ENGINE_MANIFEST_INT_H
#define FERRY_ENGINE_MANIFEST_INT_H

#include "manifest.h"

/* manifest.c */

/* "a/b" (b alone when a is ""), allocated; NULL without memory. */
char *manifest_path_join(const char *a, const char *b);

#endif
