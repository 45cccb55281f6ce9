/* SPDX-License-Identifier: MIT */
/*
 * The tables of tracekit-tables(5).  Names follow Nsight Systems' export
 * (CUPTI_ACTIVITY_KIND_KERNEL's start, end, deviceId, streamId,
 * correlationId, gridX, ...) in snake_case; every table begins with
 * run_id, so that the tables of many runs concatenate.  Times are INT64
 * nanoseconds on the trace's clock (CLOCK_REALTIME since the epoch for
 * recordings), durations INT64 nanoseconds.  A change here is a change
 * of the published schema: the man page says the same.
 */
#include "export.h"

#define I(n) { n, PQ_INT64, 0 }
#define IO(n) { n, PQ_INT64, 1 }
#define S(n) { n, PQ_STRING, 0 }
#define SO(n) { n, PQ_STRING, 1 }
#define D(n) { n, PQ_DOUBLE, 0 }
#define RUN S("run_id")
#define SPAN I("start"), I("end"), I("duration")

static const struct pq_column runs[] = {
	RUN, S("source"), SO("host"), SO("command"), SO("git_commit"),
	SO("git_branch"), SO("gpu"), SO("driver"), IO("start"), IO("end"),
	IO("duration"), I("events"), I("traces"),
};
static const struct pq_column processes[] = {
	RUN, I("pid"), IO("ppid"), S("host"), S("command"), S("label"),
	IO("start"),
};
static const struct pq_column threads[] = {
	RUN, IO("pid"), I("tid"), S("name"),
};
static const struct pq_column devices[] = {
	RUN, I("device_id"), S("host"), S("name"), S("uuid"), I("sm_count"),
	I("total_memory"), I("compute_major"), I("compute_minor"),
};
static const struct pq_column streams[] = {
	RUN, IO("pid"), IO("device_id"), I("context_id"), I("stream_id"),
	S("name"),
};
static const struct pq_column strings[] = {
	RUN, I("trace"), I("id"), S("value"),
};
static const struct pq_column kernels[] = {
	RUN, SPAN, IO("pid"), IO("device_id"), I("context_id"), I("stream_id"),
	I("correlation_id"), S("name"), S("mangled_name"),
	I("grid_x"), I("grid_y"), I("grid_z"), I("block_x"), I("block_y"),
	I("block_z"), I("cluster_x"), I("cluster_y"), I("cluster_z"),
	I("static_shared_memory"), I("dynamic_shared_memory"),
	I("registers_per_thread"), I("graph_id"), I("graph_node_id"),
	IO("step"),
};
static const struct pq_column memops[] = {
	RUN, SPAN, IO("pid"), IO("device_id"), I("context_id"), I("stream_id"),
	I("correlation_id"), S("kind"), S("name"), I("bytes"), SO("copy_kind"),
	SO("src_kind"), S("dst_kind"), IO("value"), I("async"), IO("step"),
};
static const struct pq_column api[] = {
	RUN, SPAN, IO("pid"), IO("tid"), I("correlation_id"), S("domain"),
	S("name"), I("cbid"), I("return_value"),
};
static const struct pq_column ranges[] = {
	RUN, SPAN, IO("pid"), IO("tid"), S("kind"), S("domain"), S("name"),
	IO("depth"), I("category"), I("color"), IO("range_id"),
};
static const struct pq_column memory[] = {
	RUN, I("start"), IO("pid"), IO("device_id"), I("correlation_id"),
	S("op"), S("memory_kind"), I("address"), I("bytes"),
};
static const struct pq_column counters[] = {
	RUN, I("start"), IO("pid"), IO("device_id"), S("name"), S("unit"),
	D("value"),
};
static const struct pq_column steps[] = {
	RUN, I("step"), S("name"), SPAN, I("kernel_time"), I("copy_time"),
	I("api_time"),
};
static const struct pq_column summaries[] = {
	RUN, S("table"), S("kind"), S("domain"), S("name"), I("count"),
	I("total"),
	D("mean"), D("std"), I("min"), D("p50"), D("p95"), D("p99"), I("max"),
};

#define T(name, cols) { name, cols, sizeof(cols) / sizeof(*cols) }
static const struct xt_def defs[XT_NTABLES] = {
	T("runs", runs), T("processes", processes), T("threads", threads),
	T("devices", devices), T("streams", streams), T("strings", strings),
	T("kernels", kernels), T("memops", memops), T("api", api),
	T("ranges", ranges), T("memory", memory), T("counters", counters),
	T("steps", steps), T("summaries", summaries),
};

const struct xt_def *
xt_def(enum xt t)
{
	return &defs[t];
}
