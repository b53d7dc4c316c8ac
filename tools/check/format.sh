#!/usr/bin/env bash
# The one format rule of the repository: every tracked C++ file is exactly
# what clang-format 14 (Debian's clang-format-14) makes of it, with the
# nearest .clang-format (the root one: Google style, 100 columns; the UE5
# plugin's own: Unreal conventions). `ctest` runs the check (format:clang-format),
# so CI fails on unformatted code.
#
#   tools/check/format.sh          list the files that differ; exit 1 if any
#   tools/check/format.sh --fix    rewrite them in place (`make format`)
#
# CLANG_FORMAT picks another binary; the check pins version 14 because
# other versions lay out the same code differently.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) echo "format.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
cf="${CLANG_FORMAT:-$(command -v clang-format-14 || true)}"
[[ -n "$cf" && -x "$cf" ]] ||
  { echo "format.sh: clang-format-14 not found (tools/install-deps.sh installs it)" >&2; exit 2; }
version="$("$cf" --version)"
[[ "$version" == *" 14."* || -n "${CLANG_FORMAT:-}" ]] ||
  { echo "format.sh: $cf is not version 14 ($version)" >&2; exit 2; }

cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cc')
else
  # A source tarball: the same set by extension, build trees left out.
  mapfile -t files < <(find . -path ./build -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) -print | sed 's|^\./||' | sort)
fi
if [[ $fix -eq 1 ]]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 "$cf" -i
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi
# --dry-run --Werror reports every line that would change as
# "FILE:LINE:COL: warning: code should be clang-formatted"; in batches on
# every core, since one process per file took minutes on a loaded machine.
status=0
report="$(printf '%s\0' "${files[@]}" |
  xargs -0 -n 32 -P "$(nproc)" "$cf" --dry-run --Werror 2>&1)" || status=$?
mapfile -t bad < <(printf '%s\n' "$report" |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: \(warning\|error\): code should be clang-formatted.*/\1/p' |
  sort -u)
if [[ $status -ne 0 && ${#bad[@]} -eq 0 ]]; then
  printf '%s\n' "$report" >&2
  echo "format.sh: $cf failed (exit $status) without naming a file" >&2
  exit 1
fi
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format.sh: ${#bad[@]} of ${#files[@]} C++ files are not clang-format-14 clean:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "format.sh: run 'make format' (tools/check/format.sh --fix) and commit the result" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} C++ files clang-format-14 clean"
