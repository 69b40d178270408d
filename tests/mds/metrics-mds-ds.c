/* SPDX-License-Identifier: MIT */
/*
 * braid-mds and braid-ds with [mds]/[ds] metrics_listen serve Prometheus
 * text, or OpenMetrics when asked, at GET /metrics (nfsd/metrics.c, mds/admin.c's collectors,
 * dataserver/ds.c's): after NFSv4.1 COMPOUNDs and data proxied through the
 * MDS, the MDS shows the COMPOUND procedure, each operation (with the
 * bytes READ and WRITE moved), the data servers' REGISTERs, each data
 * server (up, space) and each client (sessions, lease); the data server
 * shows the bytes written to its store and the NFSv3 and control calls it
 * served; the recall hook feeds the recall histogram; an address already
 * taken stops startup with the reason.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "tests/nfsd/metrics-test.h"

#include "mds/admin.h"
#include "nfsd/metrics.h"

static struct mt M;

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "metrics_listen = 127.0.0.1:0\nheartbeat_interval = 1s\n");
	cl_pin_port(&M, "metrics_listen = 127.0.0.1:0\nheartbeat_interval = 1s\n");
	int mp = braid_mds_metrics_port(M.mds, 0);
	CHECK(mp > 0);
	CHECK_EQ(braid_mds_metrics_port(M.mds, 1), -1);
	struct cds a;
	cds_prepare(&M, &a, "ds-a", "metrics_listen = 127.0.0.1:0\n");
	cds_start(&M, &a);
	int dp = braid_ds_metrics_port(a.ds, 0);
	CHECK(dp > 0 && dp != mp);

	struct nfs41c_session *s = mt_session(&M, "metrics-client", 0, 0);
	struct cfile f;
	cl_mkfile(&M, "f", 0644, &f);
	static uint8_t data[5000];
	memset(data, 'm', sizeof(data));
	uint32_t n;
	CHECK_EQ(cl_do_write(s, &f, 0, FILE_SYNC4, data, sizeof(data), &n, NULL, NULL), NFS4_OK);
	CHECK_EQ(n, sizeof(data));
	bool eof;
	uint8_t back[5000];
	CHECK_EQ(cl_do_read(s, &f, 0, sizeof(back), back, &n, &eof), NFS4_OK);
	CHECK_EQ(n, sizeof(back));
	mds_metrics_recall_done(M.mds, 3000000, false);
	mds_metrics_recall_done(M.mds, 300000000, true);

	char *t = mx_scrape(mp);
	mx_check_format(t);
	CHECK(mx_value(t, "braid_rpc_requests_total{program=\"nfs4\",version=\"4\","
			  "procedure=\"COMPOUND\"}") >= 4);
	CHECK(mx_value(t, "braid_rpc_duration_seconds_count{program=\"nfs4\",version=\"4\","
			  "procedure=\"COMPOUND\"}") >= 4);
	CHECK(mx_value(t, "braid_nfs4_ops_total{minorversion=\"1\",op=\"SEQUENCE\"}") >= 2);
	CHECK(mx_value(t, "braid_nfs4_ops_total{minorversion=\"1\",op=\"EXCHANGE_ID\"}") >= 1);
	CHECK_EQ(mx_value(t, "braid_nfs4_ops_total{minorversion=\"1\",op=\"WRITE\"}"), 1);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_bytes_total{minorversion=\"1\",op=\"WRITE\"}"), 5000);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_bytes_total{minorversion=\"1\",op=\"READ\"}"), 5000);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_errors_total{minorversion=\"1\",op=\"WRITE\"}"), 0);
	CHECK(mx_value(t, "braid_rpc_requests_total{program=\"braid_ctl\",version=\"1\","
			  "procedure=\"REGISTER\"}") >= 1);
	char sr[128];
	snprintf(sr, sizeof(sr), "braid_mds_ds_up{ds=\"%u\",host=\"ds-a\"}", a.id);
	CHECK_EQ(mx_value(t, sr), 1);
	snprintf(sr, sizeof(sr), "braid_mds_ds_capacity_bytes{ds=\"%u\",host=\"ds-a\"}", a.id);
	CHECK(mx_value(t, sr) > 0);
	snprintf(sr, sizeof(sr), "braid_mds_ds_drained{ds=\"%u\",host=\"ds-a\"}", a.id);
	CHECK_EQ(mx_value(t, sr), 0);
	CHECK_EQ(mx_value(t, "braid_mds_data_servers{state=\"up\"}"), 1);
	CHECK_EQ(mx_value(t, "braid_mds_clients"), 1);
	CHECK(mx_value(t, "braid_mds_capacity_bytes") > 0);
	CHECK_EQ(mx_value(t, "braid_mds_exports"), 1);
	CHECK_EQ(mx_value(t, "braid_mds_in_grace"), 0);
	uint64_t cid = 0;
	{
		const char *p = strstr(t, "braid_mds_client_sessions{client=\"0x");
		CHECK(p);
		cid = strtoull(p + strlen("braid_mds_client_sessions{client=\""), NULL, 16);
		snprintf(sr, sizeof(sr),
			 "braid_mds_client_sessions{client=\"0x%016llx\",peer=\"127.0.0.1\"}",
			 (unsigned long long)cid);
		CHECK_EQ(mx_value(t, sr), 1);
		snprintf(sr, sizeof(sr),
			 "braid_mds_client_lease_remaining_seconds{client=\"0x%016llx\",peer=\"127."
			 "0.0.1\"}",
			 (unsigned long long)cid);
		CHECK(mx_value(t, sr) > 60);
	}
	CHECK_EQ(mx_value(t, "braid_mds_layout_recall_duration_seconds_count"), 2);
	CHECK_EQ(mx_value(t, "braid_mds_layout_recall_duration_seconds_bucket{le=\"0.005\"}"), 1);
	CHECK_EQ(mx_value(t, "braid_mds_layout_recalls_completed_total{outcome=\"returned\"}"), 1);
	CHECK_EQ(mx_value(t, "braid_mds_layout_recalls_completed_total{outcome=\"revoked\"}"), 1);
	CHECK(mx_value(t, "braid_connections_accepted_total") >= 1);
	free(t);
	/* every family valid OpenMetrics too, for a scraper that asks */
	t = mx_scrape_openmetrics(mp);
	mx_check_openmetrics(t);
	CHECK_EQ(mx_value(t, "braid_nfs4_op_bytes_total{minorversion=\"1\",op=\"WRITE\"}"), 5000);
	CHECK(strstr(t, "# TYPE braid_nfs4_op_bytes counter\n"));
	free(t);

	t = mx_scrape(dp);
	mx_check_format(t);
	CHECK(mx_value(t, "braid_ds_written_bytes_total") >= 5000);
	CHECK(mx_value(t, "braid_ds_read_bytes_total") >= 5000);
	CHECK(mx_value(t, "braid_rpc_requests_total{program=\"nfs\",version=\"3\","
			  "procedure=\"WRITE\"}") >= 1);
	CHECK_EQ(mx_value(t, "braid_rpc_requests_total{program=\"braid_ctl\",version=\"1\","
			     "procedure=\"CREATE\"}"),
		 1);
	CHECK_EQ(mx_value(t, "braid_ds_id"), a.id);
	CHECK(mx_value(t, "braid_ds_capacity_bytes") > 0);
	free(t);
	t = mx_scrape_openmetrics(dp);
	mx_check_openmetrics(t);
	CHECK(mx_value(t, "braid_ds_written_bytes_total") >= 5000);
	free(t);

	/* an address already taken: startup stops, saying which */
	nfs41c_session_destroy(s);
	cds_stop(&a);
	mt_stop(&M);
	int busy = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	CHECK_EQ(bind(busy, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(busy, 1), 0);
	CHECK_EQ(getsockname(busy, (struct sockaddr *)&sa, &sl), 0);
	int bp = ntohs(sa.sin_port);
	char conf[512];
	snprintf(conf, sizeof(conf), "metrics_listen = 127.0.0.1:%d\n", bp);
	cl_pin_port(&M, conf);
	struct conf_error cerr;
	CHECK_EQ(mds_settings_load(M.conf_path, &M.set, &cerr), 0);
	char msg[512];
	struct braid_mds *mds;
	CHECK_EQ(braid_mds_start(&M.set, &mds, msg, sizeof(msg)), -EADDRINUSE);
	char want[64];
	snprintf(want, sizeof(want), "metrics_listen 127.0.0.1:%d: ", bp);
	CHECK(strstr(msg, want));
	close(busy);
	mt_finish(&M);
	return 0;
}
