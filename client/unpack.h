/*
 * unpack.h: `ferry unpack OUTDIR DEST` (see pack.h and
 * engine/volume/volread.h).
 *
 * OUTDIR is a directory of volumes or one .tar.zst file. With a manifest
 * (NAME.manifest, NAME from --name or the one manifest there) the volumes
 * NAME.00001.tar.zst ... it lists are read in order: each volume's SHA-256
 * is checked against SHA256SUMS before it is read, then every member
 * against the manifest as it is extracted. Without one, every .tar.zst
 * there is read in name order, checked as far as that goes (SHA256SUMS
 * lines for them, zstd and tar checksums, pieces).
 */
#ifndef FERRY_CLIENT_UNPACK_H
#define FERRY_CLIENT_UNPACK_H

/* Returns an exit status (exitcode.h). */
int unpack_main(int argc, char **argv);

#endif
