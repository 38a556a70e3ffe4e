#!/usr/bin/env bash
# Make a relocatable CUDA toolkit (nvcc, ptxas, headers, static runtime, compute-sanitizer) out of
# Debian's own packages, for a GPU machine that has only a newer toolkit, so a lesson can be
# recorded with an older one (`scripts/refresh.py LESSON --toolkit DIR`). Nothing is installed:
# apt uses private lists under a scratch folder, and the .deb files are unpacked with dpkg-deb.
#
#   usage: scripts/cuda-toolkit.sh VERSION OUT.tar.xz
#
# VERSION is the CUDA release Debian packages: 12.4 (trixie's nvidia-cuda-toolkit, with
# compute-sanitizer 2024.1); the archive is about 40 MB and the tree inside is cuda-VERSION/.
# On the GPU machine: tar xJf OUT.tar.xz -C /opt; then /opt/cuda-12.4/bin/nvcc and
# /opt/cuda-12.4/compute-sanitizer/compute-sanitizer work from any folder (nvcc.profile is
# relative). Checked on an H200 with driver 580: nvcc V12.4.131 builds for sm_90, and
# compute-sanitizer 2024.1.1 runs racecheck, synccheck and memcheck there.
set -euo pipefail
usage="usage: $0 VERSION OUT.tar.xz (VERSION: 12.4, the release Debian trixie packages)"
[ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
version=$1
case $version in
  12.4) suite=trixie ;;
  *) echo "$0: no Debian suite packages CUDA $version; this script makes 12.4 only" >&2; exit 2 ;;
esac
out=$(realpath -m "$2")
mkdir -p "$(dirname "$out")"
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
mkdir -p "$w/lists/partial" "$w/cache/archives/partial" "$w/parts" "$w/deb"
# The Debian mirror this machine already uses, with the next release's non-free component.
uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$uri" ] || { echo "no Debian mirror found in this machine's apt sources" >&2; exit 1; }
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main non-free" > "$w/sources.list"
o=(-o "Dir::Etc::sourcelist=$w/sources.list" -o "Dir::Etc::sourceparts=$w/parts"
   -o "Dir::State::Lists=$w/lists" -o "Dir::Cache=$w/cache" -o "APT::Sandbox::User=root")
apt-get "${o[@]}" -qq update
(cd "$w/deb" && apt-get "${o[@]}" -qq download nvidia-cuda-toolkit nvidia-cuda-dev libnvvm4)
x="$w/x"; t="$w/cuda-$version"; mkdir -p "$x" "$t/bin" "$t/lib64" "$t/include"
dpkg-deb -x "$w/deb"/nvidia-cuda-toolkit_*.deb "$x"
dpkg-deb -x "$w/deb"/libnvvm4_*.deb "$x"
# nvidia-cuda-dev is about 1 GB of libraries; only the headers and two static libraries are needed.
dpkg-deb --fsys-tarfile "$w/deb"/nvidia-cuda-dev_*.deb | tar x -C "$x" ./usr/include \
  ./usr/lib/x86_64-linux-gnu/libcudart_static.a ./usr/lib/x86_64-linux-gnu/libcudadevrt.a
k="$x/usr/lib/nvidia-cuda-toolkit"
cp -a "$k/bin/cicc" "$k/bin/nvcc" "$k/bin/crt" "$t/bin/"
# no nvlink: only -rdc builds need it
for b in ptxas fatbinary cudafe++ cuobjdump; do cp -a "$x/usr/bin/$b" "$t/bin/"; done
cp -a "$k/libdevice" "$t/"
cp -a "$k/compute-sanitizer" "$t/"; rm -rf "$t/compute-sanitizer/include"
cp -a "$x/usr/include/." "$t/include/"
cp -a "$x"/usr/lib/x86_64-linux-gnu/libcuda*.a "$x"/usr/lib/x86_64-linux-gnu/libnvvm.so* "$t/lib64/"
cat > "$t/bin/nvcc.profile" <<'PROFILE'
TOP = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH += $(_HERE_):
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64"
PROFILE
ln -s ../compute-sanitizer/compute-sanitizer "$t/bin/compute-sanitizer"
"$t/bin/nvcc" --version | tail -1
tar cf - -C "$w" "cuda-$version" | xz -T0 -6 > "$out"
ls -l "$out"
