/*
 * Tensors on the wire (engine/tensor/incoming_tensor.c, plan_tensor.c) frame
 * by frame: the receiver names a basis that is a checkpoint (BASIS) instead of
 * signing it, and rebuilds TENSOR blocks against it, refusing what does not
 * rebuild; the sender takes one BASIS of a file wanted so, and codes against
 * its own file of that path only if it is the receiver's (roles.h explains the
 * rows).
 *
 * Receiver rows: the destination holds a safetensors file of ST_DATA
 * bytes of weights (ST_SIZE in all) as the basis of the new "b.st", the
 * model's bytes of B_SIZE in three blocks, sent as TENSOR blocks of one
 * PLAIN piece each.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "roles.h"

#define B_SIZE 150000
#define ST_DATA 150000
/* The 8-byte length, the header padded to 8, the data. */
#define ST_SIZE (8 + 64 + ST_DATA)
/* Tensors where blocks are compressed (a long link, -z): a receiver
 * names its basis for them only then. */
#define ALWAYS (OPEN_F_DELTA_ALWAYS | OPEN_F_COMPRESS)
#define WANT_B { F_PLAN(1) }, { F_FILE(0, "b.st", B_SIZE) }
#define NAMED "READY WANT+T:0 BASIS:0:b.st"
#define BASIS_TREE "b.st=150072!"

/* The destination holds a checkpoint of n bytes of weights at rel. */
static void
dest_checkpoint(struct rt *rt, const char *rel, size_t n)
{
    rt_mkdir(rt, "dest", 0755);
    rt_write_safetensors(rt, rel, n, 1, 0);
}

static void
basis_setup(struct rt *rt)
{
    dest_checkpoint(rt, "dest/b.st", ST_DATA);
}

/* --basis auto's neighbour. */
static void
neighbour_setup(struct rt *rt)
{
    dest_checkpoint(rt, "dest/a.st", ST_DATA);
}

/* A basis larger than a step hashes (INCOMING_SIGS_STEP), cut short once
 * the receiver has named it for tensors and begun to hash it. */
#define BIG_DATA (20u << 20)
static void
big_basis_setup(struct rt *rt)
{
    dest_checkpoint(rt, "dest/b.st", BIG_DATA);
}

static void
cut_while_hashed(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    /* Between the reply and the BASIS; cutting again there is a no-op. */
    if (strstr(rt->out, "WANT+T:0") == NULL ||
        strstr(rt->out, "BASIS") != NULL)
        return;
    rt_path(rt, "dest/b.st", p);
    CHECK_EQ_INT(truncate(p, 1000), 0);
}

/* A basis that is no checkpoint: delta signs it as ever. */
static void
plain_basis_setup(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_write(rt, "dest/b.st", B_SIZE);
}

#define TENSORS_ALL { F_TENSOR(0, 0) }, { F_TENSOR(0, 1) }, \
    { F_TENSOR(0, 2) }

static const struct rt_case tensor_receiver[] = {
    { "tensor_basis_named", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, TENSORS_ALL, { F_FEND(0) } },
      .out = NAMED " DONE:0", .tree = "b.st=150000" },
    { "tensor_basis_neighbour", .flags = ALWAYS | OPEN_F_BASIS_AUTO,
      .setup = neighbour_setup,
      .script = { WANT_B, TENSORS_ALL, { F_FEND(0) } },
      .out = "READY WANT+T:0 BASIS:0:a.st DONE:0",
      .tree = "a.st=150072 b.st=150000" },
    /* A block sent again after a lost stream is ignored. */
    { "tensor_twice", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, TENSORS_ALL, { F_TENSOR(0, 1) }, { F_FEND(0) } },
      .out = NAMED " DONE:0", .tree = "b.st=150000" },
    { "tensor_never", .flags = ALWAYS | OPEN_F_TENSORS_NEVER,
      .setup = basis_setup, .script = { WANT_B },
      .out = "READY WANT+D:0 DSIGS:0:0+37", .tree = BASIS_TREE },
    /* A short link, without -z: the link outruns the codec, and delta
     * signs the basis as ever. */
    { "tensor_short_link", .flags = OPEN_F_DELTA_ALWAYS,
      .setup = basis_setup, .script = { WANT_B },
      .out = "READY WANT+D:0 DSIGS:0:0+37", .tree = BASIS_TREE },
    { "tensor_without_capability", .flags = ALWAYS,
      .caps_off = PROTO_CAP_TENSORS, .setup = basis_setup,
      .script = { WANT_B },
      .out = "READY WANT+D:0 DSIGS:0:0+37", .tree = BASIS_TREE },
    { "tensor_basis_no_checkpoint", .flags = ALWAYS,
      .setup = plain_basis_setup, .script = { WANT_B },
      .out = "READY WANT+D:0 DSIGS:0:0+37", .tree = "b.st=150000!" },
    /* A basis that cannot be read as it was while it is hashed is named
     * all the same, with a hash no file has: the sender finds no
     * reference, and the blocks come whole. */
    { "tensor_basis_cut_while_hashed", .flags = ALWAYS,
      .setup = big_basis_setup, .each_step = cut_while_hashed,
      .script = { WANT_B, { F_BLOCK(0, 0) }, { F_BLOCK(0, 1) },
                  { F_BLOCK(0, 2) }, { F_FEND(0) } },
      .out = "READY WANT+T:0 BASIS:0:b.st! DONE:0", .tree = "b.st=150000" },
    /* The refusals: a protocol error, nothing committed. */
    { "tensor_not_wanted", .flags = ALWAYS,
      .script = { WANT_B, { F_TENSOR(0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "tensor_off_grid", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 1), .v = RV_RAW, .b = 1000 } },
      .err = FERRY_ERR_PROTOCOL, .out = NAMED, .tree = BASIS_TREE },
    { "tensor_wrong_length", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 0), .v = RV_RAW, .b = 1000 } },
      .err = FERRY_ERR_PROTOCOL, .out = NAMED, .tree = BASIS_TREE },
    { "tensor_past_basis", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 0), .v = RV_PAST } },
      .err = FERRY_ERR_PROTOCOL, .out = NAMED, .tree = BASIS_TREE },
    { "tensor_not_pieces", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 0), .v = RV_JUNK } },
      .err = FERRY_ERR_PROTOCOL, .out = NAMED, .tree = BASIS_TREE },
    /* Pieces cut short are the sender's doing too, not a read of the
     * basis that came up short. */
    { "tensor_pieces_cut", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 0), .v = RV_CUT } },
      .err = FERRY_ERR_PROTOCOL, .out = NAMED, .tree = BASIS_TREE },
    { "tensor_without_capability_refused", .flags = ALWAYS,
      .caps_off = PROTO_CAP_TENSORS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+D:0 DSIGS:0:0+37",
      .tree = BASIS_TREE },
    /* A block that does not hash as the sender said: the basis is not
     * the one it coded against (changed, or its hash lied). */
    { "tensor_basis_changed", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TENSOR(0, 0), .v = RV_BADHASH },
                  { F_TENSOR(0, 1) }, { F_TENSOR(0, 2) }, { F_FEND(0) } },
      .out = NAMED " DONE:0:CHANGED", .tree = BASIS_TREE },
};

/* The sender: rt_make_source's tree, with src/d/b (3) a checkpoint and
 * src/e (4) its older version. */
#define OFFERS "PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d " \
    "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln"
#define READY_ { F_READY("") }
#define WANT_T(i) F_REPLY(i, REPLY_WANT, REPLY_F_TENSOR)
#define BASIS_E { F_BASIS(3, "src/e", ST_SIZE, "src/e") }

static void
ckpt_source(struct rt *rt)
{
    rt_write_safetensors(rt, "src/d/b", ST_DATA, 1, 1);
    rt_write_safetensors(rt, "src/e", ST_DATA, 1, 0);
}

static const struct rt_case tensor_sender[] = {
    /* The reference is the receiver's basis: blocks go as TENSOR. */
    { "sender_tensor_coded", .setup = ckpt_source,
      .script = { READY_, { WANT_T(3) }, BASIS_E, { F_DONE(3) } },
      .out = OFFERS " TENSOR:3:0-2 FEND:3" },
    /* Blocks wait for the BASIS. */
    { "sender_tensor_waits_for_basis", .setup = ckpt_source,
      .script = { READY_, { WANT_T(3) }, { F_IDLE } },
      .out = OFFERS },
    /* A hash that differs, a path not offered or outside the tree: no
     * reference, and without compression the blocks go as ever. */
    { "sender_tensor_hash_differs", .setup = ckpt_source,
      .script = { READY_, { WANT_T(3) },
                  { F_BASIS(3, "src/e", ST_SIZE, "src/e"), .v = RV_BADHASH },
                  { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sender_tensor_path_not_offered", .setup = ckpt_source,
      .script = { READY_, { WANT_T(3) },
                  { F_BASIS(3, "src/zz", ST_SIZE, "src/e") }, { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sender_tensor_basis_a_directory", .setup = ckpt_source,
      .script = { READY_, { WANT_T(3) },
                  { F_BASIS(3, "src/d", ST_SIZE, "src/e") }, { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    /* ... and with compression its planes alone. */
    { "sender_tensor_planes_alone", .setup = ckpt_source,
      .flags = OPEN_F_COMPRESS,
      .script = { READY_, { WANT_T(3) },
                  { F_BASIS(3, "src/e", ST_SIZE, "src/e"), .v = RV_BADHASH },
                  { F_DONE(3) } },
      .out = OFFERS " TENSOR:3:0-2 FEND:3" },
    { "sender_tensor_basis_twice", .setup = ckpt_source,
      .script = { READY_, { WANT_T(3) }, BASIS_E, BASIS_E },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " TENSOR:3:0-2 FEND:3" },
    { "sender_tensor_basis_not_wanted_so", .setup = ckpt_source,
      .script = { READY_, { F_WANT(3) },
                  { F_BASIS(3, "src/e", ST_SIZE, "src/e") } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sender_tensor_without_capability", .setup = ckpt_source,
      .caps_off = PROTO_CAP_TENSORS,
      .script = { READY_, { WANT_T(3) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
};

TEST(tensor_receiver)
{
    RT_RUN_TABLE(tensor_receiver, rt_receiver_case);
}

TEST(tensor_sender)
{
    RT_RUN_TABLE(tensor_sender, rt_sender_case);
}
