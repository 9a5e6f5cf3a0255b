/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Does a peer's network namespace hold an IP address?  The question the
 * kernel's rdma_cm asks of a REQ's destination (cma.c: the listener's
 * namespace must be that of the net device with the address), asked
 * here when listeners of several namespaces share one service ID.
 *
 * The daemon looks for itself rather than taking a list from its
 * clients: a program could claim another namespace's addresses and take
 * its connections; the kernel's own table cannot lie.  It enters the
 * peer's namespace (setns on /proc/PID/ns/net, which needs
 * CAP_SYS_ADMIN: the daemon runs as root), opens an rtnetlink socket
 * there (a socket stays in the namespace it was made in) and goes back
 * at once, then dumps the addresses.  Only the loop thread does this,
 * and only for a REQ whose service ID is listened on in more than one
 * namespace.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "madcmd/madcmd_int.h"

/* An rtnetlink socket made in pid's network namespace; -1 on failure. */
static int nl_socket_in(pid_t pid)
{
	char path[64];
	int self, target, fd = -1;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	target = open(path, O_RDONLY | O_CLOEXEC);
	if (target < 0)
		return -1;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0) {
		close(target);
		return -1;
	}
	if (setns(target, CLONE_NEWNET) == 0) {
		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
		if (setns(self, CLONE_NEWNET)) {
			/* Stuck in another namespace: nothing else may run here. */
			madcmd_log(LOG_CRIT, "setns back to the daemon's namespace: %s",
				   strerror(errno));
			abort();
		}
	}
	close(self);
	close(target);
	return fd;
}

/* Is (family, addr) among the addresses of one RTM_NEWADDR message? */
static bool msg_has(const struct nlmsghdr *h, int family, const uint8_t *addr, size_t alen)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*ifa));

	if (len < 0 || ifa->ifa_family != family)
		return false;
	for (const struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if ((a->rta_type == IFA_LOCAL || a->rta_type == IFA_ADDRESS) &&
		    RTA_PAYLOAD(a) == alen && !memcmp(RTA_DATA(a), addr, alen))
			return true;
	return false;
}

bool madcmd_default_netns_has_addr(void *ctx, pid_t pid, uint64_t netns, int family,
				   const uint8_t *addr)
{
	struct {
		struct nlmsghdr h;
		struct ifaddrmsg ifa;
	} req;
	static uint8_t buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	size_t alen = family == AF_INET ? 4 : 16;
	bool found = false, done = false;
	int fd;

	(void)ctx;
	(void)netns; /* the pid's /proc entry is the way in */
	if (pid <= 0 || (family != AF_INET && family != AF_INET6))
		return false;
	fd = nl_socket_in(pid);
	if (fd < 0)
		return false;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = RTM_GETADDR;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = 1;
	req.ifa.ifa_family = (unsigned char)family;
	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
		close(fd);
		return false;
	}
	/* The whole dump is read (the kernel answers at once), match or not. */
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int len = (int)n;

		if (n <= 0)
			break;
		for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (h->nlmsg_type == RTM_NEWADDR && !found)
				found = msg_has(h, family, addr, alen);
		}
	}
	close(fd);
	return found;
}
