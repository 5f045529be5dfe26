#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests (Debian's packages):
#
#   scripts/pg-cluster.sh start DIR   create and start it in DIR (a unix
#                                     socket in DIR, no TCP); prints its URL
#   scripts/pg-cluster.sh stop DIR    stop it
#   scripts/pg-cluster.sh resume DIR  start it again (after stop)
#   scripts/pg-cluster.sh start-tls DIR PORT
#                                     one that accepts only TLS, on
#                                     127.0.0.1:PORT, with a certificate for
#                                     "localhost" from a CA made for it
#                                     (DIR/ca.pem; also DIR/other-ca.pem, a
#                                     CA that signed nothing); prints its URL
#
# PostgreSQL refuses to run as root: as root, the cluster belongs to the
# system user `wrepl-pg` (created if missing).
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?DIR}
if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql >&2
fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u wrepl-pg -- "$@"; else "$@"; fi
}
case $cmd in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then
      id wrepl-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin wrepl-pg
      chown wrepl-pg "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -A trust -U wrepl -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses='' -k $dir -c fsync=off -c max_connections=200" start >&2 \
      || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h "$dir" -U wrepl wrepl >&2
    echo "postgresql://wrepl@/wrepl?host=$dir"
    ;;
  start-tls)
    port=${3:?PORT}
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then
      id wrepl-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin wrepl-pg
      chown wrepl-pg "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -A trust -U wrepl -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    (
      cd "$dir"
      as_owner openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=wrepl test CA" -keyout ca.key -out ca.pem 2>/dev/null
      as_owner openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=another CA" -keyout other-ca.key -out other-ca.pem 2>/dev/null
      as_owner openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
      printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$dir/ext.cnf"
      as_owner openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$dir/ext.cnf" -out server.pem 2>/dev/null
      chmod 600 server.key
    )
    # Only TLS connections from loopback; anything else is refused.
    printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 0.0.0.0/0 reject\n' \
      | as_owner tee "$dir/data/pg_hba.conf" >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c ssl=on -c ssl_cert_file=$dir/server.pem -c ssl_key_file=$dir/server.key" \
      start >&2 || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h "$dir" -p "$port" -U wrepl wrepl >&2
    echo "postgresql://wrepl@localhost:$port/wrepl"
    ;;
  stop)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    ;;
  resume)
    dir=$(cd "$dir" && pwd)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses='' -k $dir -c fsync=off -c max_connections=200" start >&2
    ;;
  *) echo "usage: $0 start|stop|resume DIR, or start-tls DIR PORT" >&2; exit 2 ;;
esac
