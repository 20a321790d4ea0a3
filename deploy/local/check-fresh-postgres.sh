#!/usr/bin/env bash
# make check-fresh-postgres: proves postgres.sh's last case, a machine with
# no PostgreSQL server, where apt-get installs it and a private trust-auth
# cluster is started: once with nothing installed, once with only the
# client (psql without initdb). The clone sits under /root (mode 0700),
# which the postgres user cannot walk into. This machine has PostgreSQL, so the check builds one
# that does not: a minimal Debian bookworm root (debootstrap) run in its own
# network namespace. The machine's server on 127.0.0.1:5432 is out of its
# reach there, and the one way out is deb.debian.org:80, relayed by socat.
#
# Needs root and Debian's package mirror; not part of make test. Takes about
# a minute. Everything it makes is removed on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
log() { echo "check-fresh-postgres: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (debootstrap, chroot, network namespaces)"; exit 1; }

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v socat >/dev/null || need+=(socat)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

work=$(mktemp -d /tmp/fresh-postgres.XXXXXX)
ns=freshpg$$ host=fpg$$h guest=fpg$$g relay=
# A /30 of its own; the guest reaches only this address.
net=10.254.$((RANDOM % 250))
hostip=$net.1 guestip=$net.2
cleanup() {
  [ -n "$relay" ] && kill "$relay" 2>/dev/null
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$host" 2>/dev/null || true
  # The chroot's mounts lived in a private mount namespace that is gone by
  # now; never remove a tree that still has one.
  if findmnt -rn -o TARGET | grep -q "^$work"; then
    log "mounts remain under $work; not removing it"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

log "building a minimal Debian bookworm root in $work/root"
debootstrap --variant=minbase bookworm "$work/root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }

ip netns add "$ns"
ip link add "$host" type veth peer name "$guest"
ip link set "$guest" netns "$ns"
ip addr add "$hostip/30" dev "$host"
ip link set "$host" up
ip netns exec "$ns" ip addr add "$guestip/30" dev "$guest"
ip netns exec "$ns" ip link set "$guest" up
ip netns exec "$ns" ip link set lo up
socat "TCP-LISTEN:80,bind=$hostip,fork,reuseaddr" TCP:deb.debian.org:80 &
relay=$!
echo "$hostip deb.debian.org" >>"$work/root/etc/hosts"

mkdir -p "$work/root/root/repo/deploy/local"
chmod 0700 "$work/root/root"
cp "$root/deploy/local/postgres.sh" "$work/root/root/repo/deploy/local/"
cat >"$work/root/check.sh" <<'EOF'
#!/bin/bash
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
if [ -e /usr/lib/postgresql/*/bin/initdb ]; then
  echo "check-fresh-postgres: the root already has a PostgreSQL server" >&2; exit 1
fi
url=$(bash /root/repo/deploy/local/postgres.sh) || { echo "check-fresh-postgres: postgres.sh failed" >&2; exit 1; }
case "$url" in
  postgres://*) ;;
  *) echo "check-fresh-postgres: postgres.sh printed no URL: $url" >&2; exit 1 ;;
esac
psql "$url" -Atc 'select version()' || { echo "check-fresh-postgres: $url does not answer" >&2; exit 1; }
echo "$url"
EOF
chmod +x "$work/root/check.sh"

# in_root runs a command in the root, in the namespace whose one way out
# is the mirror.
in_root() { # $1 = the root, then the command
  ip netns exec "$ns" unshare --mount --pid --fork bash -c '
    set -e
    r=$1; shift
    mount --make-rprivate /
    mount -t proc proc "$r/proc"
    mount --bind /dev "$r/dev"
    mount -t tmpfs tmpfs "$r/dev/shm"
    mount -t tmpfs tmpfs "$r/run"
    chroot "$r" "$@"
  ' _ "$@"
}

# A second root with only the client: copied before the first run installs
# the server in the first.
cp -a "$work/root" "$work/client-only"
for case in root client-only; do
  if [ "$case" = client-only ]; then
    log "installing only postgresql-client in the second root"
    in_root "$work/$case" bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client' \
      >"$work/$case-client.log" 2>&1 || { tail -20 "$work/$case-client.log" >&2; log "FAILED to install the client"; exit 1; }
  fi
  log "$case: running postgres.sh inside it (apt-get install, then a cluster)"
  out=$(in_root "$work/$case" /check.sh 2>"$work/$case.log") || { tail -30 "$work/$case.log" >&2; log "$case: FAILED"; exit 1; }
  grep '^postgres.sh:' "$work/$case.log" >&2 || true
  log "$case: passed: $(echo "$out" | tr '\n' ' ')"
done
