/*
 * ckpt_files.h: checkpoint files built byte by byte, as torch.save, the
 * safetensors library and NumPy write them, for the tests of formcheck
 * and the tensor layout (so that they need none of those programs).
 * Every builder returns a heap block of exactly its size (check_dup:
 * free with free) and fails the test if memory runs out.
 */
#ifndef FERRY_TESTS_UNIT_CKPT_FILES_H
#define FERRY_TESTS_UNIT_CKPT_FILES_H

#include <stddef.h>
#include <stdint.h>

/* A zip member: its name, data (NULL: a pattern of len bytes) and
 * compression method (0 stored; any other is only written as a number,
 * the data as it is). */
struct ckpt_member {
    const char *name;
    const uint8_t *data;
    size_t len;
    uint16_t method;
};

/* A zip of the members, its central directory and end record; zip64 puts
 * the directory's offset in a zip64 end record, as writers do past 4 GiB.
 * Members' data start where their local header ends. */
uint8_t *ckpt_zip(const struct ckpt_member *m, size_t n, int zip64,
    size_t *len);

/* torch.save's layout: archive/data.pkl (300 bytes), archive/data/0 and
 * archive/data/1 (70000 and 4096), archive/version. */
uint8_t *ckpt_torch(int zip64, size_t *len);

/* A safetensors file: the 8-byte length of hdr (a JSON text, padded with
 * pad spaces) then data (NULL: a pattern) of data_len bytes. */
uint8_t *ckpt_safetensors(const char *hdr, size_t pad, const uint8_t *data,
    size_t data_len, size_t *len);

/* An .npy file, version 1, of descr ('<f4') and shape ("(30, 20)") with
 * data (NULL: a pattern) of data_len bytes; the header padded to 128. */
uint8_t *ckpt_npy(const char *descr, const char *shape, const uint8_t *data,
    size_t data_len, size_t *len);

#endif
