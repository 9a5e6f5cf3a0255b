#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# bench/storm_plots.sh: the small plots of docs/storms.md, from the output
# directories of bench/storm.sh runs.
#
#   storm_plots.sh RUNS OUT
#
# RUNS holds the runs under the names docs/storms.md gives
# (a2a-H-nomad and a2a-H-mad for H = 8 16 32 64, a2a-16x4-mad,
# m2o-16-loss10-nomad, m2o-16x4-loss10-mad, m2o-64x4-loss10-mad); a
# missing one is left out.
# Writes OUT/mesh.png (time to the full mesh vs hosts), OUT/cdf.png
# (connect latency CDFs at 4,032 connections), OUT/sa.png (SA queries/s,
# with and without madcmd's host cache) and OUT/loss.png (many-to-one
# with CM MAD loss), 480x300 each.
set -eu
[ $# -eq 2 ] || { sed -n '6p' "$0" | sed 's/^# *//' >&2; exit 2; }
runs=$1 out=$2
command -v gnuplot >/dev/null || { echo "storm_plots: needs gnuplot" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# hosts, then time to the full mesh (s), per mode, from the summary lines.
for mode in nomad mad; do
	for h in 8 16 32 64; do
		f=$runs/a2a-$h-$mode/summary.txt
		[ -f "$f" ] || continue
		awk -v h="$h" '/^storm: / { for (i = 1; i <= NF; i++) if ($i == "in") print h, $(i + 1) }' "$f"
	done >"$tmp/mesh-$mode"
done
# plotline FILE TITLE: one plot clause, or nothing for a missing file.
plotline() {
	if [ -s "$1" ]; then
		printf '"%s" every ::1 using 1:2 with steps lw 2 title "%s", ' "$1" "$2"
	fi
}
cdfs=$(plotline "$runs/a2a-64-nomad/cdf.csv" "64 hosts, CM in each process")$(plotline \
	"$runs/a2a-64-mad/cdf.csv" "64 hosts, madcmd")$(plotline "$runs/a2a-16x4-mad/cdf.csv" \
	"16 hosts x 4, madcmd")
sas=""
for r in a2a-64-nomad:"64 hosts, CM in each process" a2a-16x4-mad:"16 hosts x 4, madcmd"; do
	f=$runs/${r%%:*}/timeline.csv
	[ -s "$f" ] && sas="$sas\"$f\" every ::1 using 1:4 with steps lw 2 title \"${r#*:}\", "
done
loss=$(plotline "$runs/m2o-16-loss10-nomad/cdf.csv" "15 to 1, CM in each process")$(plotline \
	"$runs/m2o-16x4-loss10-mad/cdf.csv" "63 to 1 (16 x 4), madcmd")$(plotline \
	"$runs/m2o-64x4-loss10-mad/cdf.csv" "255 to 1 (64 x 4), madcmd")

gnuplot <<EOF
set terminal pngcairo size 480,300 font ",9" noenhanced
set datafile separator whitespace
set grid
set key left top
set output "$out/mesh.png"
set title "all-to-all, 1 process per host: time to the full mesh"
set xlabel "hosts"
set ylabel "s"
set logscale xy
set xtics (8, 16, 32, 64)
set xrange [6:80]
plot "$tmp/mesh-nomad" using 1:2 with linespoints lw 2 title "CM in each process", \
     "$tmp/mesh-mad" using 1:2 with linespoints lw 2 title "madcmd"
unset logscale
set xtics autofreq
set autoscale x
set datafile separator ","
set output "$out/cdf.png"
set title "connect latency CDF, all-to-all, 4,032 connections"
set xlabel "connect latency (ms)"
set ylabel "fraction"
plot ${cdfs%, }
set output "$out/sa.png"
set title "SA queries/s (all records), all-to-all, 4,032 connections"
set xlabel "time since the first connect (s)"
set ylabel "queries/s"
set key right top
plot ${sas%, }
set output "$out/loss.png"
set title "many-to-one, 10% CM MAD loss: connect latency CDF"
set xlabel "connect latency (ms)"
set ylabel "fraction"
set key left top
set yrange [0:1.25]
set ytics 0, 0.2, 1
set logscale x
plot ${loss%, }
EOF
