#!/bin/bash
# Runs the README's examples as written: every line starting with `cutune ` inside a fenced
# block opened by ```sh readme-example (or ```sh (readme-example)), with the built binary first
# on PATH. A line carrying the comment `# needs-gpu` is skipped where no GPU is present
# (always, here: the test suite runs without one). Fails when the README has no such block,
# or when every line of it is skipped: then nothing was checked.
#
# usage: readme_examples_test.sh CUTUNE_BINARY README.md

set -u
binary=$(realpath -m "$1")
readme=$(realpath -m "$2")

if [[ ! -x $binary ]]; then
  echo "FAIL: no cutune binary at $binary"
  exit 1
fi
if [[ ! -f $readme ]]; then
  echo "FAIL: $readme does not exist; no README examples to run"
  exit 1
fi

mapfile -t examples < <(awk '
  /^```sh[ ]+\(?readme-example\)?[ ]*$/ { inside = 1; next }
  /^```/ { inside = 0; next }
  inside && /^cutune / { print }
' "$readme")

if [[ ${#examples[@]} -eq 0 ]]; then
  echo "FAIL: $readme has no \`\`\`sh readme-example block with cutune lines; nothing to run"
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$(dirname "$binary"):$PATH"
cd "$work" || exit 1

failed=0
ran=0
for line in "${examples[@]}"; do
  if [[ $line == *"# needs-gpu"* ]]; then
    echo "SKIP (needs a GPU): $line"
    continue
  fi
  echo "RUN: $line"
  output=$(bash -c "$line" 2>&1)
  rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: exit status $rc from: $line"
    echo "$output" | tail -n 40
    failed=$((failed + 1))
  fi
  ran=$((ran + 1))
done
echo "$ran README example(s) run, $failed failed"
if [[ $ran -eq 0 ]]; then
  echo "FAIL: every README example needs a GPU; nothing was run"
  exit 1
fi
[[ $failed -eq 0 ]]
