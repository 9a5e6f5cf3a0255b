/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ladder CAPTURE: draw a capture's CM exchanges as a ladder
 * (sequence) diagram, HTML or SVG, or print its model as JSON.  The
 * command line only: the model is tools/ladder_model.c, the drawings
 * tools/ladder_svg.c and tools/ladder_json.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/decode.h"
#include "tools/ladder_model.h"
#include "tools/ladder_render.h"

#define LADDER_SYSTEM_HOSTS "/etc/rdma/madcm_hosts"

enum ladder_format { FMT_HTML, FMT_SVG, FMT_JSON };

static void ladder_usage(FILE *out)
{
	fputs("Usage: madcm ladder [OPTIONS] CAPTURE\n"
	      "\n"
	      "Draw the CM exchanges of a pcap capture (madcm's MADCM_TRACE, fabsim\n"
	      "capture, ibdump, tshark -F pcap) as a ladder diagram: one lifeline per\n"
	      "port, one arrow per CM MAD, retries, duplicates and CM timeouts marked.\n"
	      "CAPTURE '-' is standard input.\n"
	      "\n"
	      "  -o, --output FILE     write to FILE (.svg: SVG, else HTML); default stdout\n"
	      "      --svg             SVG instead of HTML\n"
	      "  -j, --json            the model (lifelines, arrows, timeouts) as JSON\n"
	      "      --sa              SA queries and answers as arrows too\n"
	      "  -c, --comm-id ID      only the connection with this comm ID (or SIDR\n"
	      "                        request ID)\n"
	      "  -s, --service-id SID  only connections to this service ID\n"
	      "      --from TIME       only from TIME on, TIME since the first MAD:\n"
	      "      --to TIME         seconds, or with a unit (ns, us, ms, s)\n"
	      "      --hosts FILE      address file naming the ports (madcm-hosts(5))\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0 drawn, 1 when the capture was unreadable or held malformed\n"
	      "records (what could be read is still drawn), 2 on a usage error.\n",
	      out);
}

/* TIME: a number of seconds, or a number with a unit ns, us, ms, s. */
static int parse_time(const char *s, int64_t *ns)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0 || v > 9e9)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			*ns = (int64_t)(v * units[i].scale + 0.5);
			return 0;
		}
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (end == s || *end || errno || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The address file: --hosts, else $MADCM_HOSTS, $MADCM_ADDR_FILE, the system's. */
static int load_hosts(const char *path, struct madcm_addr_table *t)
{
	char err[256];
	bool asked = path != NULL;
	int ret;

	if (!path)
		path = getenv("MADCM_HOSTS");
	if (!path || !*path)
		path = getenv("MADCM_ADDR_FILE");
	if (!path || !*path)
		path = LADDER_SYSTEM_HOSTS;
	ret = madcm_addr_file_load(path, t, err, sizeof(err));
	if (!ret)
		return 0;
	if (asked || ret != -ENOENT)
		fprintf(stderr, "madcm ladder: %s\n", err);
	madcm_addr_table_free(t);
	return asked ? ret : 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcasecmp(s + n - k, tail);
}

int cmd_ladder(int argc, char **argv)
{
	enum { OPT_SVG = 256, OPT_SA, OPT_FROM, OPT_TO, OPT_HOSTS };
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"svg", no_argument, NULL, OPT_SVG},
	    {"json", no_argument, NULL, 'j'},
	    {"sa", no_argument, NULL, OPT_SA},
	    {"comm-id", required_argument, NULL, 'c'},
	    {"service-id", required_argument, NULL, 's'},
	    {"from", required_argument, NULL, OPT_FROM},
	    {"to", required_argument, NULL, OPT_TO},
	    {"hosts", required_argument, NULL, OPT_HOSTS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ladder_opts lo = {0};
	struct madcm_addr_table hosts = {0};
	struct ladder_model m;
	const char *output = NULL, *hosts_path = NULL, *name;
	enum ladder_format fmt = FMT_HTML;
	bool svg = false, json = false;
	uint8_t *buf;
	size_t len = 0;
	uint64_t v;
	FILE *in, *out;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:jc:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case OPT_SVG:
			svg = true;
			break;
		case 'j':
			json = true;
			break;
		case OPT_SA:
			lo.sa = true;
			break;
		case 'c':
			if (parse_u64(optarg, UINT32_MAX, &v)) {
				fprintf(stderr, "madcm ladder: bad comm ID '%s'\n", optarg);
				return 2;
			}
			lo.has_comm_id = true;
			lo.comm_id = (uint32_t)v;
			break;
		case 's':
			if (parse_u64(optarg, UINT64_MAX, &v)) {
				fprintf(stderr, "madcm ladder: bad service ID '%s'\n", optarg);
				return 2;
			}
			lo.has_service_id = true;
			lo.service_id = v;
			break;
		case OPT_FROM:
		case OPT_TO:
			if (parse_time(optarg, c == OPT_FROM ? &lo.from_ns : &lo.to_ns)) {
				fprintf(stderr, "madcm ladder: bad time '%s' (e.g. 1.5, 250ms)\n",
					optarg);
				return 2;
			}
			*(c == OPT_FROM ? &lo.has_from : &lo.has_to) = true;
			break;
		case OPT_HOSTS:
			hosts_path = optarg;
			break;
		case 'h':
			ladder_usage(stdout);
			return 0;
		default:
			ladder_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		ladder_usage(stderr);
		return 2;
	}
	if (json)
		fmt = FMT_JSON;
	else if (svg || (output && ends_with(output, ".svg")))
		fmt = FMT_SVG;
	name = argv[optind];
	if (load_hosts(hosts_path, &hosts))
		return 1;
	lo.hosts = hosts.n ? &hosts : NULL;

	in = strcmp(name, "-") ? fopen(name, "rb") : stdin;
	if (!in) {
		fprintf(stderr, "madcm ladder: %s: %s\n", name, strerror(errno));
		madcm_addr_table_free(&hosts);
		return 1;
	}
	buf = decode_read_all(in, &len);
	if (in != stdin)
		fclose(in);
	if (!buf) {
		fprintf(stderr, "madcm ladder: %s: read error\n", name);
		madcm_addr_table_free(&hosts);
		return 1;
	}
	ret = ladder_model_build(&m, &lo, name, buf, len, stderr);
	free(buf);
	madcm_addr_table_free(&hosts);
	if (ret) {
		fprintf(stderr, "madcm ladder: %s: %s\n", name,
			ret == -EPROTO ? "not a pcap capture" : strerror(-ret));
		return 1;
	}
	out = output ? fopen(output, "w") : stdout;
	if (!out) {
		fprintf(stderr, "madcm ladder: %s: %s\n", output, strerror(errno));
		ladder_model_free(&m);
		return 1;
	}
	ret = fmt == FMT_JSON  ? ladder_render_json(out, &m, name)
	      : fmt == FMT_SVG ? ladder_render_svg(out, &m, name)
			       : ladder_render_html(out, &m, name);
	if (output ? fclose(out) : fflush(out))
		ret = -EIO;
	if (ret)
		fprintf(stderr, "madcm ladder: %s: write error\n", output ? output : "stdout");
	if (m.malformed)
		ret = 1;
	ladder_model_free(&m);
	return ret ? 1 : 0;
}
