#!/usr/bin/env bash
# Pictures of the measurements, as SVG, made by gnuplot from the text the tools print:
#
#   tools/plot.sh tune  TUNE_TXT  OUT_DIR   the tuning experiment (alcop_tune_run_*): predicted
#                                            vs measured time of every candidate, the model's
#                                            pick and its top 20 marked; OUT_DIR/tune_<problem>.svg
#   tools/plot.sh bench BENCH_TXT OUT_DIR   the benchmark (alcop_bench_*, or bench.txt of
#                                            tools/gpu-check.sh): TFLOP/s of each variant, the
#                                            library (cuBLAS, cuDNN) apart; OUT_DIR/bench.svg
#
# PLOT_FORMAT=png writes PNG files instead. Runs where gnuplot is (tools/setup.sh installs it),
# e.g. here on the folder that tools/gpu-check.sh brought back from a GPU machine.
set -euo pipefail
kind=${1:?usage: tools/plot.sh tune|bench TEXT OUT_DIR}
text=${2:?usage: tools/plot.sh tune|bench TEXT OUT_DIR}
out=${3:?usage: tools/plot.sh tune|bench TEXT OUT_DIR}
command -v gnuplot > /dev/null || { echo "plot.sh: gnuplot is missing (tools/setup.sh installs it)" >&2; exit 2; }
format=${PLOT_FORMAT:-svg}
case "$format" in
    svg) terminal="svg dynamic" ;;
    png) terminal="pngcairo" ;;
    *) echo "plot.sh: PLOT_FORMAT is svg or png" >&2; exit 2 ;;
esac
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case "$kind" in
tune)
    # "problem <id> <label>" then "candidate <id> <rank> <weight> <predicted us> <measured ms> <check> <schedule>".
    device=$(awk -F'\t' '$1 == "device" { print $2 }' "$text")
    made=0
    while IFS=$'\t' read -r _ id label; do
        awk -F'\t' -v id="$id" '$1 == "candidate" && $2 == id && $7 == "ok" { print $5, $6, $3 }' "$text" > "$tmp/$id.dat"
        [ -s "$tmp/$id.dat" ] || continue
        gnuplot <<GP
set terminal $terminal size 800,600 font "sans,12"
set output "$out/tune_$id.$format"
set title "Tuning: $label, every candidate measured\n$device" noenhanced
set xlabel "predicted time (us, the model's GPU)"
set ylabel "measured time (ms)"
set logscale xy
set grid
set key top left
plot "$tmp/$id.dat" using 1:(\$3 >= 20 ? \$2 : 1/0) with points pt 7 ps 0.6 lc rgb "#8080a0" title "candidates", \
     "$tmp/$id.dat" using 1:(\$3 > 0 && \$3 < 20 ? \$2 : 1/0) with points pt 7 ps 0.9 lc rgb "#2060c0" title "the model's top 20", \
     "$tmp/$id.dat" using 1:(\$3 == 0 ? \$2 : 1/0) with points pt 5 ps 1.8 lc rgb "#d02020" title "the model's pick"
GP
        echo "plot.sh: $out/tune_$id.$format"
        made=$((made + 1))
    done < <(grep -P '^problem\t' "$text")
    [ $made -gt 0 ] || { echo "plot.sh: no checked candidates in $text" >&2; exit 1; }
    ;;
bench)
    # Rows: problem (32 columns), variant (10), then ms, TFLOP/s, ... and the check.
    awk '{
        problem = substr($0, 1, 32); variant = substr($0, 34, 10); n = split(substr($0, 45), f, " ");
        sub(/ +$/, "", problem); sub(/ +$/, "", variant);
        if (n < 7 || f[1] !~ /^[0-9.]+$/ || f[2] !~ /^[0-9.]+$/) next;
        if (!(problem in seen)) { seen[problem] = 1; order[++count] = problem }
        library = (variant == "cuBLAS" || variant == "cuDNN");
        vs = f[4] == "-" ? "" : f[4];
        rows[problem] = rows[problem] sprintf("\"%s\" %s %d \"%s\"\n", variant, f[2], library, vs)
    } END {
        for (i = 1; i <= count; i++) { print "# " order[i]; printf "%s\n\n", rows[order[i]] }
    }' "$text" > "$tmp/bench.dat"
    problems=$(grep -c '^# ' "$tmp/bench.dat" || true)
    [ "$problems" -gt 0 ] || { echo "plot.sh: no benchmark rows in $text" >&2; exit 1; }
    {
        echo "set terminal $terminal size 900,$((260 * problems)) font \"sans,11\""
        echo "set output \"$out/bench.$format\""
        echo "set multiplot layout $problems,1"
        echo "set style fill solid 0.8 border -1"
        echo "set boxwidth 0.7"
        echo "set ylabel \"TFLOP/s\""
        echo "set grid ytics"
        echo "set xtics rotate by -20 noenhanced"
        echo "set yrange [0:*]"
        echo "set offsets 0, 0, graph 0.12, 0"
        echo "unset key"
        i=0
        grep '^# ' "$tmp/bench.dat" | sed 's/^# //' | while read -r title; do
            echo "set title \"$title (red: the library; above a bar: the library's time over its)\" noenhanced"
            echo "plot \"$tmp/bench.dat\" index $i using 0:2:(\$3 > 0 ? 0xd02020 : 0x2060c0):xtic(1) with boxes lc rgb variable, \"\" index $i using 0:2:4 with labels offset 0,0.7 font \"sans,9\" noenhanced"
            i=$((i + 1))
        done
        echo "unset multiplot"
    } > "$tmp/bench.gp"
    gnuplot "$tmp/bench.gp"
    echo "plot.sh: $out/bench.$format"
    ;;
*)
    echo "usage: tools/plot.sh tune|bench TEXT OUT_DIR" >&2
    exit 2
    ;;
esac
