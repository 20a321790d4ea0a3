package auditspool

import (
	"fmt"
	"syscall"
)

// Filesystems whose statfs magic the spool refuses. A segment's blocks are
// reserved before it is mapped, because a store into a mapped page the
// filesystem cannot back kills the process (SIGBUS) instead of failing.
// That reservation holds only where a reserved block is written in place:
// a copy-on-write filesystem allocates a new block for every write, so a
// full disk still fails in the middle of a reserved segment; a network
// filesystem neither honours the reservation nor the directory's flock
// reliably, and its page cache is not the durable copy SECURITY.md's
// crash table counts on.
var refusedFilesystems = map[int64]string{
	0x9123683e: "btrfs (copy-on-write)",
	0x2fc12fc1: "ZFS (copy-on-write)",
	0xca451a4e: "bcachefs (copy-on-write)",
	0x6969:     "NFS (network)",
	0xff534d42: "CIFS (network)",
	0xfe534d42: "SMB2 (network)",
	0x517b:     "SMB (network)",
	0x65735546: "FUSE (a user-space filesystem whose reservation cannot be relied on)",
}

// checkFilesystem refuses a spool directory on a filesystem where a
// reserved segment can still run out of space or lose its lock.
func checkFilesystem(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("auditspool: %w", err)
	}
	return refuseFilesystem(dir, int64(st.Type))
}

func refuseFilesystem(dir string, magic int64) error {
	if name, bad := refusedFilesystems[magic]; bad {
		return fmt.Errorf("auditspool: %s is on %s; the spool needs a local filesystem that writes reserved blocks in place, such as ext4 or XFS (SECURITY.md, Audit log durability)", dir, name)
	}
	return nil
}
