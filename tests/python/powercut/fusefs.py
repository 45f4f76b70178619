"""The model served through FUSE with mfusepy's path-based (high-level) API."""

import os

import mfusepy

from powercut.model import Model


class PowerCutOps(mfusepy.Operations):
    """FUSE operations over a `Model`. Errors are OSErrors carrying an errno, which
    mfusepy returns to the kernel. Locks (flock, fcntl) are left out on purpose: the
    kernel then keeps them itself, per mount, which is what sled's lock on `db` needs.

    Known gap: fstat of an unlinked file fails (ESTALE). The kernel sends that getattr
    without the handle, and libfuse's path API has no path to give for it."""

    use_ns = True

    def __init__(self, model: Model, on_mounted=None):
        self.model = model
        self.on_mounted = on_mounted
        # Handles opened with O_APPEND write at the end whatever offset arrives.
        self.append = set()

    def init_with_config(self, conn_info, config_3):
        """Called once the kernel has the mount: no caching of names, attributes or
        data in the kernel (so nothing the daemon holds can be hidden or outlive a
        cut), and handles that keep an unlinked file alive instead of renaming it."""
        if config_3 is not None:
            config_3.entry_timeout = 0.0
            config_3.negative_timeout = 0.0
            config_3.attr_timeout = 0.0
            config_3.direct_io = 1
            config_3.hard_remove = 1
            config_3.use_ino = 1
            config_3.kernel_cache = 0
            config_3.auto_cache = 0
        if self.on_mounted is not None:
            self.on_mounted()

    def getattr(self, path, fh=None):
        """stat of a path, or of an open handle when the kernel sends one."""
        return self.model.getattr(path, fh)

    def readdir(self, path, fh):
        """The current entries, with their modes and inode numbers."""
        return [(name, {"st_mode": mode, "st_ino": ino}, 0)
                for name, mode, ino in self.model.readdir(path, fh)]

    def opendir(self, path):
        """A handle for readdir and fsyncdir."""
        return self.model.opendir(path)

    def releasedir(self, path, fh):
        """Closes a directory handle."""
        self.model.release(fh)
        return 0

    def fsyncdir(self, path, datasync, fh):
        """Makes the directory's entries durable (fsync(2) of a directory)."""
        self.model.fsyncdir(path, fh)
        return 0

    def mkdir(self, path, mode):
        """Makes a directory."""
        self.model.mkdir(path, mode)
        return 0

    def rmdir(self, path):
        """Removes an empty directory."""
        self.model.rmdir(path)
        return 0

    def create(self, path, mode, flags):
        """Creates and opens a file; returns its handle."""
        fh = self.model.create(path, mode, flags)
        if flags & os.O_APPEND:
            self.append.add(fh)
        return fh

    def mknod(self, path, mode, dev):
        """Creates a regular file (nothing else is supported)."""
        self.model.mknod(path, mode)
        return 0

    def open(self, path, flags):
        """Opens a file; returns its handle."""
        fh = self.model.open(path, flags)
        if flags & os.O_APPEND:
            self.append.add(fh)
        return fh

    def release(self, path, fh):
        """Closes a file handle."""
        self.append.discard(fh)
        self.model.release(fh)
        return 0

    def flush(self, path, fh):
        """close(2) of one descriptor: nothing to do."""
        return 0  # close(2) promises nothing about durability either

    def read(self, path, size, offset, fh):
        """Reads current bytes through the handle."""
        return self.model.read(path, size, offset, fh)

    def write(self, path, data, offset, fh):
        """Writes current bytes through the handle (not durable)."""
        return self.model.write(path, data, offset, fh, append=fh in self.append)

    def truncate(self, path, length, fh=None):
        """Sets the current size (not durable)."""
        self.model.truncate(path, length, fh)
        return 0

    def fallocate(self, path, mode, offset, size, fh):
        """Grows a file with zeros (mode 0 only)."""
        self.model.fallocate(path, mode, offset, size, fh)
        return 0

    def fsync(self, path, datasync, fh):
        """Makes the file's current bytes durable (fsync and fdatasync alike)."""
        self.model.fsync(path, fh)
        return 0

    def unlink(self, path):
        """Removes a file's name; open handles keep it."""
        self.model.unlink(path)
        return 0

    def rename(self, old, new):
        """rename(2), replacing an existing target."""
        self.model.rename(old, new)
        return 0

    def symlink(self, target, source):
        """Makes a symbolic link."""
        # mfusepy's order: the link's path first, then what it points to.
        self.model.symlink(target, source)
        return 0

    def readlink(self, path):
        """A symbolic link's target."""
        return self.model.readlink(path)

    def chmod(self, path, mode):
        """Changes permission bits."""
        self.model.chmod(path, mode)
        return 0

    def chown(self, path, uid, gid):
        """Changes owners."""
        self.model.chown(path, uid, gid)
        return 0

    def utimens(self, path, times=None):
        """Sets times (ns)."""
        self.model.utimens(path, times)
        return 0

    def access(self, path, amode):
        """Existence only: root may do anything."""
        self.model.getattr(path)  # ENOENT if missing
        return 0

    def statfs(self, path):
        """Filesystem sizes for statvfs(2)."""
        return self.model.statfs()
