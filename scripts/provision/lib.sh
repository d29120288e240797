# Shared by the provisioning scripts (sourced). Messages go to stderr; stdout carries only
# KEY=VALUE lines, the environment the tests read (scripts/provision.sh collects them).

say() { echo "provision: $*" >&2; }

# Stop the run with one line naming what to do.
die() { echo "provision: $*" >&2; exit 1; }

# Export one variable to the tests.
export_env() { echo "$1=$2"; }

is_root() { [ "$(id -u)" = 0 ]; }

# provision.sh --check: report only, install and start nothing.
checking() { [ -n "${KOINII_PROVISION_CHECK:-}" ]; }

# need_debs PACKAGE...: install the Debian packages not yet installed when we can (root and
# apt-get; `apt-get update` once per provisioning run), else stop naming the command.
need_debs() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  checking && die "check: missing ${missing[*]}"
  if is_root && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    local mark=${KOINII_PROVISION_APT_MARK:-}
    if [ -z "$mark" ] || [ ! -f "$mark" ]; then
      apt-get update -qq >&2
      [ -n "$mark" ] && touch "$mark"
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    refuse_missing "${missing[@]}"
  fi
}

# refuse_missing PACKAGE...: stop the run naming the command that installs them (what
# need_debs does when it may not install).
refuse_missing() {
  die "missing $*: run \`sudo apt-get update && sudo apt-get install -y $*\` and start the tests again"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
