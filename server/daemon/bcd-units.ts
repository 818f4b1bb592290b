/**
 * The two systemd units the install script writes. `bcd.service` runs `bcd node` as the unprivileged `bcd` user
 * (config.toml's `[helper]` user), with no capabilities, a read-only system, no devices and only its state
 * directory writable; `bcd-helper.service` runs `bcd helper` as root, which holds the TPM for it: the only
 * devices it sees are the TPM's, it has no network (its socket is a unix socket), and of root's capabilities it
 * keeps only those that hand the socket to the `bcd` user. server/daemon/bcd-units.test.ts runs
 * `systemd-analyze verify` on both and holds `bcd.service`'s `systemd-analyze security` exposure below 3.0.
 */
export const SHARED_HARDENING = `NoNewPrivileges=yes
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateMounts=yes
PrivateIPC=yes
ProtectHostname=yes
ProtectClock=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectProc=invisible
ProcSubset=pid
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
KeyringMode=private
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM`;

/** The node daemon, as the `[helper]` user (the install script creates `bcd`). Node's JIT needs W+X memory. */
export const BCD_SERVICE = `[Unit]
Description=Better Compute daemon (bcd node, unprivileged)
Wants=network-online.target bcd-helper.service
After=network-online.target bcd-helper.service

[Service]
Type=simple
User=bcd
Group=bcd
ExecStart=/usr/local/bin/bcd node --config /etc/bcd/config.toml
Restart=on-failure
RestartSec=5
UMask=0077
ReadWritePaths=/var/lib/bcd
CapabilityBoundingSet=
PrivateDevices=yes
PrivateUsers=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
${SHARED_HARDENING}

[Install]
WantedBy=multi-user.target
`;

/**
 * The TPM helper, as root: the TPM devices only, no network, and CAP_CHOWN/CAP_FOWNER for its socket. The shared
 * filter denies @privileged, which holds the chown calls; `SystemCallFilter=@chown` after it allows them again,
 * since the helper hands its socket to the `[helper]` user with chown (denied, it exits and never listens).
 */
export const BCD_HELPER_SERVICE = `[Unit]
Description=Better Compute TPM helper (bcd helper, holds the TPM for bcd.service)
Before=bcd.service

[Service]
Type=simple
ExecStart=/usr/local/bin/bcd helper --config /etc/bcd/config.toml
Restart=on-failure
RestartSec=5
UMask=0077
RuntimeDirectory=bcd-helper
RuntimeDirectoryMode=0755
CapabilityBoundingSet=CAP_CHOWN CAP_FOWNER
DevicePolicy=closed
DeviceAllow=/dev/tpmrm0 rw
DeviceAllow=/dev/tpm0 rw
PrivateNetwork=yes
IPAddressDeny=any
RestrictAddressFamilies=AF_UNIX
${SHARED_HARDENING}
SystemCallFilter=@chown

[Install]
WantedBy=multi-user.target
`;

/** The `[helper]` table the install script appends to config.toml. */
export const HELPER_CONFIG = `
[helper]
user = "bcd"
socket = "/run/bcd-helper/helper.sock"
`;
