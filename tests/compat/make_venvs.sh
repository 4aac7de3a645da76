#!/usr/bin/env bash
# Builds one venv per old pylance release under $VENVS (default /work/venvs or .compat-venvs),
# each with a pyarrow and numpy of its own era, so generate.py can run inside it.
set -euo pipefail
VENVS=${VENVS:-.compat-venvs}
PYTHON=${PYTHON:-python3}
# release  pylance  pins (pyarrow/numpy of that release's era)
RELEASES=(
  "0.10 pylance==0.10.18 pyarrow==15.0.0 numpy<2"
  "0.13 pylance==0.13.0 pyarrow==15.0.0 numpy<2"
  "0.16 pylance==0.16.1 pyarrow==16.1.0 numpy<2"
  "0.20 pylance==0.20.0 pyarrow==18.1.0 numpy<2.2"
  "0.25 pylance==0.25.2 pyarrow==19.0.1 numpy<2.3"
  "0.33 pylance==0.33.0 pyarrow==21.0.0 numpy<2.4"
  "0.39 pylance==0.39.0 pyarrow==21.0.0 numpy<2.4"
  "2.0 pylance==2.0.1 pyarrow==22.0.0"
  "9.0 pylance==9.0.1 pyarrow==22.0.0"
)
only=${1:-}
for line in "${RELEASES[@]}"; do
  read -r rel pins <<<"$line"
  [[ -n "$only" && "$only" != "$rel" ]] && continue
  dir="$VENVS/pylance-$rel"
  if [[ ! -x "$dir/bin/python" ]]; then
    "$PYTHON" -m venv "$dir"
  fi
  # shellcheck disable=SC2086
  "$dir/bin/pip" install -q --disable-pip-version-check $pins
  "$dir/bin/python" -c "import lance, pyarrow; print('$rel', lance.__version__, pyarrow.__version__)"
done
