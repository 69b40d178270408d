/* SPDX-License-Identifier: MIT */
/*
 * The ring pool and I/O batches of the braid-ds object store: each call
 * borrows a ring and runs its reads, writes and syncs as one batch.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataserver/store_impl.h"

/* ---------------------------------------------------------------- rings */

struct ds_ring *st_ring_get(struct ds_store *st)
{
	struct ds_ring *r;
	pthread_mutex_lock(&st->ring_mu);
	r = st->ring_free;
	if (r)
		st->ring_free = r->next;
	pthread_mutex_unlock(&st->ring_mu);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (st->io == DS_STORE_IO_URING) {
		int rc = io_uring_queue_init(RING_DEPTH, &r->ring, 0);
		r->uring = rc == 0;
		if (rc) {
			pthread_mutex_lock(&st->ring_mu);
			if (!st->ring_warned)
				st_log("io_uring_queue_init: %s; syscalls instead", strerror(-rc));
			st->ring_warned = true;
			pthread_mutex_unlock(&st->ring_mu);
		}
	}
	return r;
}

void st_ring_free(struct ds_ring *r)
{
	if (r->uring)
		io_uring_queue_exit(&r->ring);
	free(r);
}

void st_ring_put(struct ds_store *st, struct ds_ring *r)
{
	if (r->broken) {
		st_ring_free(r);
		return;
	}
	pthread_mutex_lock(&st->ring_mu);
	r->next = st->ring_free;
	st->ring_free = r;
	pthread_mutex_unlock(&st->ring_mu);
}

/* ------------------------------------------------------------ I/O batch */

void st_iop_rw(struct iop *op, enum iop_kind kind, int fd, struct iovec *iov, int cnt, uint64_t off)
{
	*op = (struct iop){.kind = kind,
			   .fd = fd,
			   .iov = iov,
			   .iovcnt = cnt,
			   .off = off,
			   .len = iov_total(iov, cnt)};
}

void st_iop_sync(struct iop *op, bool datasync, int fd)
{
	*op = (struct iop){.kind = datasync ? IOP_FDATASYNC : IOP_FSYNC, .fd = fd};
}

static void iop_complete(struct ds_store *st, struct iop *op, int res)
{
	if (res == -EINTR || res == -EAGAIN)
		return; /* run it again */
	if (res < 0) {
		op->err = res;
		op->fin = true;
		return;
	}
	if (op->kind == IOP_FSYNC || op->kind == IOP_FDATASYNC) {
		ctr_add(op->kind == IOP_FSYNC ? &st->ctr.fsyncs : &st->ctr.fdatasyncs, 1);
		op->fin = true;
		return;
	}
	if (res == 0) {
		if (op->kind == IOP_READ)
			op->eof = true;
		else
			op->err = -EIO;
		op->fin = true;
		return;
	}
	size_t n = (size_t)res;
	op->done += n;
	op->off += n;
	op->len -= n;
	while (n) {
		size_t k = op->iov->iov_len < n ? op->iov->iov_len : n;
		op->iov->iov_base = (uint8_t *)op->iov->iov_base + k;
		op->iov->iov_len -= k;
		n -= k;
		if (op->iov->iov_len == 0) {
			op->iov++;
			op->iovcnt--;
		}
	}
	while (op->iovcnt && op->iov->iov_len == 0) {
		op->iov++;
		op->iovcnt--;
	}
	/* resubmitting there would fail with EINVAL: the file ends there */
	if (op->len && op->kind == IOP_READ && op->direct && op->off % DS_STORE_ALIGN)
		op->eof = true;
	op->fin = op->len == 0 || op->eof;
}

static int iop_syscall(const struct iop *op)
{
	ssize_t rc;
	switch (op->kind) {
	case IOP_READ:
		rc = preadv(op->fd, op->iov, op->iovcnt, (off_t)op->off);
		break;
	case IOP_WRITE:
		rc = pwritev(op->fd, op->iov, op->iovcnt, (off_t)op->off);
		break;
	case IOP_FSYNC:
		rc = fsync(op->fd);
		break;
	default:
		rc = fdatasync(op->fd);
		break;
	}
	return rc < 0 ? -errno : (int)rc;
}

static void iop_prep(struct io_uring_sqe *sqe, const struct iop *op)
{
	switch (op->kind) {
	case IOP_READ:
		io_uring_prep_readv(sqe, op->fd, op->iov, (unsigned)op->iovcnt, op->off);
		break;
	case IOP_WRITE:
		io_uring_prep_writev(sqe, op->fd, op->iov, (unsigned)op->iovcnt, op->off);
		break;
	default:
		io_uring_prep_fsync(sqe, op->fd,
				    op->kind == IOP_FDATASYNC ? IORING_FSYNC_DATASYNC : 0);
		break;
	}
}

/*
 * Whether op runs as a plain syscall.  Page-cache writes do: io_uring hands
 * them to a worker thread on filesystems without async buffered writes (ext4:
 * 33 us instead of 4 us per 4 KiB write, measured), and the caller waits for
 * the batch anyway.  O_DIRECT I/O, page-cache reads and syncs use the ring.
 */
static bool iop_inline(const struct ds_ring *r, const struct iop *op)
{
	return !r->uring || (op->kind == IOP_WRITE && !op->direct);
}

static void io_fail_all(struct ds_ring *r, struct iop *ops, unsigned n, int rc, const char *what)
{
	/* completions may still be owed: never reuse this ring */
	st_log("%s: %s", what, strerror(-rc));
	r->broken = true;
	for (unsigned i = 0; i < n; i++)
		if (!ops[i].fin) {
			ops[i].err = rc;
			ops[i].fin = true;
		}
}

/*
 * Run ops[0..n) to completion: the ring's submitted together, the inline ones
 * run while they are in flight, then all waited for; partial transfers are
 * resubmitted.  Returns the first error.
 */
int st_io_run(struct ds_store *st, struct ds_ring *r, struct iop *ops, unsigned n)
{
	for (;;) {
		unsigned pending = 0, left = 0;
		for (unsigned i = 0; i < n; i++) {
			if (ops[i].fin || iop_inline(r, &ops[i]))
				continue;
			struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
			iop_prep(sqe, &ops[i]);
			io_uring_sqe_set_data64(sqe, i);
			pending++;
		}
		while (pending && io_uring_sq_ready(&r->ring)) {
			int rc = io_uring_submit(&r->ring);
			if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
				io_fail_all(r, ops, n, rc, "io_uring_submit");
				return rc;
			}
		}
		for (unsigned i = 0; i < n; i++)
			if (!ops[i].fin && iop_inline(r, &ops[i]))
				iop_complete(st, &ops[i], iop_syscall(&ops[i]));
		while (pending) {
			struct io_uring_cqe *cqe;
			int rc = io_uring_wait_cqe(&r->ring, &cqe);
			if (rc == -EINTR || rc == -EAGAIN)
				continue;
			if (rc < 0) {
				io_fail_all(r, ops, n, rc, "io_uring_wait_cqe");
				return rc;
			}
			iop_complete(st, &ops[io_uring_cqe_get_data64(cqe)], cqe->res);
			io_uring_cqe_seen(&r->ring, cqe);
			pending--;
		}
		for (unsigned i = 0; i < n; i++)
			left += !ops[i].fin;
		if (!left)
			break;
	}
	for (unsigned i = 0; i < n; i++)
		if (ops[i].err)
			return ops[i].err;
	return 0;
}

/* Read len bytes at off into buf; *got is what the file had (the rest is zeroed). */
int st_io_pread(struct ds_store *st, struct ds_ring *r, int fd, void *buf, size_t len, uint64_t off,
		size_t *got)
{
	struct iovec v = {buf, len};
	struct iop op;
	st_iop_rw(&op, IOP_READ, fd, &v, 1, off);
	int rc = st_io_run(st, r, &op, 1);
	if (rc)
		return rc;
	memset((uint8_t *)buf + op.done, 0, len - op.done);
	if (got)
		*got = op.done;
	return 0;
}

int st_io_pwrite(struct ds_store *st, struct ds_ring *r, int fd, const void *buf, size_t len,
		 uint64_t off)
{
	struct iovec v = {(void *)buf, len};
	struct iop op;
	st_iop_rw(&op, IOP_WRITE, fd, &v, 1, off);
	return st_io_run(st, r, &op, 1);
}

int st_io_fsync(struct ds_store *st, struct ds_ring *r, int fd, bool datasync)
{
	struct iop op;
	st_iop_sync(&op, datasync, fd);
	return st_io_run(st, r, &op, 1);
}
