#!/bin/sh
# The entrypoint of the engine node image (runbox-engine-node:latest, built by
# docker/build-images --engine-node, installed as /usr/local/sbin/runbox-engine-node): a Docker
# engine serving its API over TLS with client certificates required on port 2376 (and on
# /var/run/docker.sock inside the node), for the tests of several engines (tests/engines).
#
# The node runs without --privileged (this kind of VM cannot grant CAP_SYS_RESOURCE), with:
#   docker run --cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined
#     --security-opt apparmor=unconfined --security-opt systempaths=unconfined --device /dev/fuse
#     --device-cgroup-rule='a *:* rwm' --cgroupns private --tmpfs /run --tmpfs /tmp
#     -v VOLUME:/var/lib/docker runbox-engine-node:latest
# so /sys and the cgroup file systems are mounted read-only: they are remounted read-write here,
# then the entrypoint waits until /certs holds ca.pem, server-cert.pem and server-key.pem (the
# test copies them in with `docker cp`, before the start or after it once it knows the node's
# address), and finally runs dockerd under tini (which reaps the orphans a dying containerd leaves).
#
# Storage: overlay2 on /var/lib/docker, which must be a volume (the image declares it), not the
# node's own overlay root. RUNBOX_NODE_STORAGE_DRIVER=fuse-overlayfs chooses the other driver.
# No --live-restore: stopping or restarting a node's container ends its containers either way, and
# without it dockerd stops them itself when the node is stopped, as a default engine does.
# Arguments are added to dockerd's.
set -eu

say() { echo "runbox-engine-node: $*" >&2; }

# /sys, then every cgroup mount (the tmpfs at /sys/fs/cgroup first), read-write. The cgroup
# hierarchies are bind mounts made read-only per mount point: a plain remount fails with EBUSY,
# "remount,bind,rw" changes the mount point's flag only. The paths come from /proc/self/mounts
# (cgroup paths have no spaces to escape).
mount -o remount,rw /sys || say "cannot remount /sys read-write"
for m in $(awk '$2 == "/sys/fs/cgroup" && $3 == "tmpfs" { print $2 }' /proc/self/mounts) \
    $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts); do
    mount -o remount,bind,rw "$m" 2>/dev/null || mount -o remount,rw "$m" || say "cannot remount $m read-write"
done

# cgroup v2 (unified) only: dockerd needs the controllers enabled in the node's root cgroup, which
# holds processes and so cannot delegate them: move these processes into a child first.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p /sys/fs/cgroup/init
    xargs -rn1 </sys/fs/cgroup/cgroup.procs >/sys/fs/cgroup/init/cgroup.procs 2>/dev/null || true
    sed -e 's/ / +/g' -e 's/^/+/' </sys/fs/cgroup/cgroup.controllers >/sys/fs/cgroup/cgroup.subtree_control ||
        say "cannot enable the cgroup v2 controllers"
fi

# The TLS files: complete once openssl reads each of them (a copy may still be under way).
CERTS=${RUNBOX_NODE_CERTS:-/certs}
tls_ready() {
    [ -s "$CERTS/ca.pem" ] && [ -s "$CERTS/server-cert.pem" ] && [ -s "$CERTS/server-key.pem" ] &&
        openssl x509 -noout -in "$CERTS/ca.pem" 2>/dev/null &&
        openssl x509 -noout -in "$CERTS/server-cert.pem" 2>/dev/null &&
        openssl pkey -noout -in "$CERTS/server-key.pem" 2>/dev/null
}
n=0
until tls_ready; do
    [ $((n % 100)) != 0 ] || say "waiting for ca.pem, server-cert.pem and server-key.pem in $CERTS"
    n=$((n + 1))
    sleep 0.1
done

# gVisor: RUNBOX_NODE_RUNSC holds runsc's arguments ("--platform=ptrace"): runsc is registered as
# the runtime "runsc" in daemon.json, with them (what docs/security.md tells an operator to write).
if [ -n "${RUNBOX_NODE_RUNSC:-}" ]; then
    args=""
    for a in $RUNBOX_NODE_RUNSC; do
        args="$args${args:+, }\"$a\""
    done
    mkdir -p /etc/docker
    printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": [%s]}}}\n' "$(command -v runsc)" "$args" \
        >/etc/docker/daemon.json
    say "gVisor registered as runsc: $(cat /etc/docker/daemon.json)"
fi

mkdir -p /var/run /var/lib/docker
rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
exec tini -- dockerd \
    --host=unix:///var/run/docker.sock \
    --host=tcp://0.0.0.0:2376 \
    --tlsverify \
    --tlscacert="$CERTS/ca.pem" \
    --tlscert="$CERTS/server-cert.pem" \
    --tlskey="$CERTS/server-key.pem" \
    --data-root=/var/lib/docker \
    --storage-driver="${RUNBOX_NODE_STORAGE_DRIVER:-overlay2}" \
    "$@"
