/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Prints the options a new rsocket starts with (on fake verbs, no
 * fabric), for tests/integration/rsocket_conf.sh, which runs it with
 * /etc/rdma/rsocket/ replaced in a mount namespace: SO_RCVBUF, SO_SNDBUF,
 * RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE as "name value".
 */
#include <stdio.h>
#include <sys/socket.h>

#include <rdma/rsocket.h>

#include "tests/unit/fake_verbs.h"

int main(void)
{
	static const struct {
		const char *name;
		int level, opt;
	} opts[] = {
	    {"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF},   {"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF},
	    {"RDMA_SQSIZE", SOL_RDMA, RDMA_SQSIZE}, {"RDMA_RQSIZE", SOL_RDMA, RDMA_RQSIZE},
	    {"RDMA_INLINE", SOL_RDMA, RDMA_INLINE}, {"RDMA_IOMAPSIZE", SOL_RDMA, RDMA_IOMAPSIZE},
	};
	int s;

	if (fake_cma_setup())
		return 1;
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	if (s < 0) {
		perror("rsocket");
		return 1;
	}
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		int v = -1;
		socklen_t len = sizeof(v);

		if (rgetsockopt(s, opts[i].level, opts[i].opt, &v, &len)) {
			perror(opts[i].name);
			return 1;
		}
		printf("%s %d\n", opts[i].name, v);
	}
	rclose(s);
	fake_cma_teardown();
	return 0;
}
