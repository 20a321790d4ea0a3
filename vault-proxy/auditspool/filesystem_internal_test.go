package auditspool

import (
	"strings"
	"testing"
)

func TestSpoolRefusesFilesystemsWithoutInPlaceReservation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		magic int64
		want  string // "" when accepted
	}{
		{"ext4", 0xef53, ""},
		{"xfs", 0x58465342, ""},
		{"tmpfs", 0x01021994, ""},
		{"overlayfs", 0x794c7630, ""},
		{"btrfs", 0x9123683e, "btrfs"},
		{"zfs", 0x2fc12fc1, "ZFS"},
		{"bcachefs", 0xca451a4e, "bcachefs"},
		{"nfs", 0x6969, "NFS"},
		{"cifs", 0xff534d42, "CIFS"},
		{"smb2", 0xfe534d42, "SMB2"},
		{"fuse", 0x65735546, "FUSE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseFilesystem("/spool", tc.magic)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/spool")):
				t.Fatalf("error %v, want one naming %s and the directory", err, tc.want)
			}
		})
	}
}

// The directory the tests use (the machine's own disk) passes the real
// statfs check, so every Open in this package went through it.
func TestSpoolAcceptsTheTestDisk(t *testing.T) {
	if err := checkFilesystem(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
