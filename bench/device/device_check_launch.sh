#!/usr/bin/env bash
# The device pack's entry point (bench/device/pack_device_build.sh puts it beside payload.tar.gz as
# PACK/device_check.sh): unpacks the payload into a fresh temporary folder, runs the device
# check there (bench/device/device_check.sh, same arguments, same $OUT) and removes the folder.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/cutune_pack.XXXXXX")
if ! tar -C "$dir" -xzf "$here/payload.tar.gz"; then
  echo "device_check.sh: cannot unpack $here/payload.tar.gz" >&2
  rm -rf "$dir"
  exit 2
fi
bash "$dir/cutune_pack/device_check.sh" "$@"
rc=$?
rm -rf "$dir"
exit $rc
