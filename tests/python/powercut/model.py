"""The filesystem the FUSE daemon serves: in memory, and with a durable shadow.

Every inode keeps what it holds now and what a power cut would leave of it:

* a regular file: its current bytes, and the bytes it had at its last fsync (empty if it
  was never synced);
* a directory: its current entries, and its durable entries.

Writes and truncations change current bytes only; fsync (or fdatasync) of a file makes
its current bytes durable. Directory operations change current entries, and when they
become durable depends on the mode:

* ``ext4``: at once (the operation is applied to the durable entries too), as a
  journalling filesystem that commits metadata in order would at best give;
* ``posix``: only on fsync of that directory (fsyncdir), which is all POSIX promises.

A cut (power loss) keeps only what is durable: every file reverts to its durable bytes,
every directory to its durable entries, and inodes no durable entry reaches are dropped.
Data belongs to the inode, not to a name: a file synced under one name and then renamed
keeps its data under whichever name the durable entries give it.

Not modelled: durability of inode metadata (mode, times), partial or reordered writes
within one file, and sync_file_range (the kernel does not pass it to FUSE; on a real
disk it makes neither metadata nor the drive's cache durable).
"""

import errno
import os
import re
import stat
import threading
import time

EXT4 = "ext4"
POSIX = "posix"
MODES = (EXT4, POSIX)

ROOT_INO = 1
BLOCK = 4096
NAME_MAX = 255


def _error(code):
    return OSError(code, os.strerror(code))


class Inode:
    """One file, directory or symbolic link, with its current and durable contents."""

    __slots__ = ("ino", "mode", "uid", "gid", "atime", "mtime", "ctime", "data",
                 "durable_data", "entries", "durable_entries", "target", "links")

    def __init__(self, ino, mode, now, uid=0, gid=0):
        self.ino = ino
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.atime = self.mtime = self.ctime = now
        is_dir = stat.S_ISDIR(mode)
        self.data = bytearray() if stat.S_ISREG(mode) else None
        self.durable_data = b""
        self.entries = {} if is_dir else None
        self.durable_entries = {} if is_dir else None
        self.target = None
        # Current directory entries naming it (a directory's own "." and ".." aside).
        self.links = 0

    @property
    def is_dir(self):
        """Whether it is a directory."""
        return self.entries is not None

    @property
    def is_file(self):
        """Whether it is a regular file."""
        return self.data is not None


class Model:
    """The whole filesystem; every public method takes the lock, so FUSE may call it
    from many threads. Paths are absolute, as libfuse's high-level API gives them."""

    def __init__(self, mode, drop_fsync=None, drop_fsyncdir=None):
        """`drop_fsync` and `drop_fsyncdir` are regular expressions: a sync of a
        matching path answers success and makes nothing durable (a disk that lies, or
        a program that forgot the call), to prove a test notices."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.drop_fsync = re.compile(drop_fsync) if drop_fsync else None
        self.drop_fsyncdir = re.compile(drop_fsyncdir) if drop_fsyncdir else None
        self.lock = threading.RLock()
        now = time.time_ns()
        root = Inode(ROOT_INO, stat.S_IFDIR | 0o755, now)
        root.links = 1
        self.inodes = {ROOT_INO: root}
        self.next_ino = ROOT_INO + 1
        # File handle -> inode number; files and directories share the numbering.
        self.handles = {}
        self.next_fh = 1
        # posix mode: renames across directories not yet durable, as (source directory,
        # source name, target directory, target name, inode). Syncing either directory
        # makes the whole rename durable, as a journal commits it as one transaction.
        self.renames = []
        self.stats = self._new_stats()

    # -- lookups ---------------------------------------------------------------------

    @staticmethod
    def _parts(path):
        return [p for p in path.split("/") if p]

    def _resolve(self, path):
        node = self.inodes[ROOT_INO]
        for part in self._parts(path):
            if not node.is_dir:
                raise _error(errno.ENOTDIR)
            ino = node.entries.get(part)
            if ino is None:
                raise _error(errno.ENOENT)
            node = self.inodes[ino]
        return node

    def _parent(self, path):
        parts = self._parts(path)
        if not parts:
            raise _error(errno.EBUSY)  # the root has no parent entry to change
        name = parts[-1]
        if len(name.encode()) > NAME_MAX:
            raise _error(errno.ENAMETOOLONG)
        parent = self._resolve("/" + "/".join(parts[:-1]))
        if not parent.is_dir:
            raise _error(errno.ENOTDIR)
        return parent, name

    def _node(self, path, fh):
        """The inode behind a handle when there is one (an unlinked file has no path),
        else behind the path."""
        if fh is not None and fh in self.handles:
            return self.inodes[self.handles[fh]]
        if path is None:
            raise _error(errno.EBADF)
        return self._resolve(path)

    def _paths(self, durable=False):
        """Inode number -> a path to it, through the current or the durable entries."""
        out = {ROOT_INO: "/"}
        todo = [ROOT_INO]
        while todo:
            node = self.inodes[todo.pop()]
            entries = node.durable_entries if durable else node.entries
            for name, ino in entries.items():
                if ino in out or ino not in self.inodes:
                    continue
                base = out[node.ino]
                out[ino] = base.rstrip("/") + "/" + name
                if self.inodes[ino].is_dir:
                    todo.append(ino)
        return out

    # -- directory entries -----------------------------------------------------------

    def _new_inode(self, mode):
        ino = self.next_ino
        self.next_ino += 1
        node = Inode(ino, mode, time.time_ns())
        self.inodes[ino] = node
        return node

    def _entries_changed(self, *dirs):
        now = time.time_ns()
        for d in dirs:
            d.mtime = d.ctime = now
            if self.mode == EXT4:
                # Directory operations are durable at once.
                d.durable_entries = dict(d.entries)

    def _link(self, parent, name, node):
        parent.entries[name] = node.ino
        node.links += 1

    def _unlink(self, parent, name):
        node = self.inodes[parent.entries.pop(name)]
        node.links -= 1
        node.ctime = time.time_ns()
        return node

    # -- operations --------------------------------------------------------------------

    def getattr(self, path, fh=None):
        """stat(2) of a path or an open handle, as mfusepy wants it (times in ns)."""
        with self.lock:
            return self._stat(self._node(path, fh))

    def _stat(self, node):
        if node.is_dir:
            subdirs = sum(1 for ino in node.entries.values() if self.inodes[ino].is_dir)
            nlink, size = 2 + subdirs, BLOCK
        elif node.is_file:
            nlink, size = node.links, len(node.data)
        else:
            nlink, size = node.links, len(node.target.encode())
        return {
            "st_mode": node.mode, "st_ino": node.ino, "st_nlink": nlink, "st_size": size,
            "st_uid": node.uid, "st_gid": node.gid, "st_blksize": BLOCK,
            "st_blocks": (size + 511) // 512, "st_atime": node.atime,
            "st_mtime": node.mtime, "st_ctime": node.ctime,
        }

    def readdir(self, path, fh=None):
        """The current entries, with "." and "..", each as (name, mode, inode)."""
        with self.lock:
            node = self._node(path, fh)
            if not node.is_dir:
                raise _error(errno.ENOTDIR)
            out = [(".", node.mode, node.ino), ("..", stat.S_IFDIR, ROOT_INO)]
            for name, ino in node.entries.items():
                child = self.inodes[ino]
                out.append((name, child.mode, ino))
            return out

    def mkdir(self, path, mode):
        """Makes a directory (durable at once in ext4 mode)."""
        with self.lock:
            self._count("mkdir")
            parent, name = self._parent(path)
            if name in parent.entries:
                raise _error(errno.EEXIST)
            node = self._new_inode(stat.S_IFDIR | (mode & 0o7777))
            self._link(parent, name, node)
            self._entries_changed(parent)

    def create(self, path, mode, flags=os.O_RDWR):
        """Creates (or, without O_EXCL, opens) a regular file; returns a handle."""
        with self.lock:
            self._count("create")
            parent, name = self._parent(path)
            existing = parent.entries.get(name)
            if existing is not None:
                if flags & os.O_EXCL:
                    raise _error(errno.EEXIST)
                return self._open(self.inodes[existing], flags)
            node = self._new_inode(stat.S_IFREG | (mode & 0o7777))
            self._link(parent, name, node)
            self._entries_changed(parent)
            return self._open(node, flags)

    def mknod(self, path, mode):
        """Only regular files: nothing here needs devices or FIFOs."""
        if not stat.S_ISREG(mode):
            raise _error(errno.EPERM)
        with self.lock:
            self.release(self.create(path, mode, os.O_EXCL))

    def symlink(self, path, target):
        """Makes a symbolic link at `path` pointing to `target`."""
        with self.lock:
            self._count("symlink")
            parent, name = self._parent(path)
            if name in parent.entries:
                raise _error(errno.EEXIST)
            node = self._new_inode(stat.S_IFLNK | 0o777)
            node.target = target
            self._link(parent, name, node)
            self._entries_changed(parent)

    def readlink(self, path):
        """A symbolic link's target."""
        with self.lock:
            node = self._resolve(path)
            if node.target is None:
                raise _error(errno.EINVAL)
            return node.target

    def open(self, path, flags):
        """Opens a file; returns a handle that keeps working after an unlink."""
        with self.lock:
            self._count("open")
            return self._open(self._resolve(path), flags)

    def _open(self, node, flags):
        if node.is_dir and flags & os.O_ACCMODE != os.O_RDONLY:
            raise _error(errno.EISDIR)
        if node.is_file and flags & os.O_TRUNC:
            node.data = bytearray()
            node.mtime = node.ctime = time.time_ns()
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = node.ino
        return fh

    def opendir(self, path):
        """Opens a directory for readdir and fsyncdir."""
        with self.lock:
            node = self._resolve(path)
            if not node.is_dir:
                raise _error(errno.ENOTDIR)
            return self._open(node, os.O_RDONLY)

    def release(self, fh):
        """Closes a handle (file or directory)."""
        with self.lock:
            self.handles.pop(fh, None)

    def read(self, path, size, offset, fh):
        """Reads current bytes."""
        with self.lock:
            node = self._node(path, fh)
            if not node.is_file:
                raise _error(errno.EISDIR)
            return bytes(node.data[offset:offset + size])

    def write(self, path, data, offset, fh, append=False):
        """Writes current bytes (a hole before `offset` reads as zeros)."""
        with self.lock:
            node = self._node(path, fh)
            if not node.is_file:
                raise _error(errno.EISDIR)
            if append:
                offset = len(node.data)
            end = offset + len(data)
            if offset > len(node.data):
                node.data.extend(bytes(offset - len(node.data)))
            node.data[offset:end] = data
            node.mtime = node.ctime = time.time_ns()
            self._count("write")
            self.stats["bytes_written"] += len(data)
            return len(data)

    def truncate(self, path, length, fh=None):
        """Sets the current size."""
        with self.lock:
            self._count("truncate")
            node = self._node(path, fh)
            if not node.is_file:
                raise _error(errno.EISDIR)
            if length < len(node.data):
                del node.data[length:]
            else:
                node.data.extend(bytes(length - len(node.data)))
            node.mtime = node.ctime = time.time_ns()

    def fallocate(self, path, mode, offset, size, fh):
        """Plain allocation only (mode 0): the file grows, with zeros."""
        if mode != 0:
            raise _error(errno.EOPNOTSUPP)
        with self.lock:
            node = self._node(path, fh)
            if not node.is_file:
                raise _error(errno.EISDIR)
            if offset + size > len(node.data):
                node.data.extend(bytes(offset + size - len(node.data)))

    def unlink(self, path):
        """Removes a name; an open handle keeps the inode."""
        with self.lock:
            self._count("unlink")
            parent, name = self._parent(path)
            ino = parent.entries.get(name)
            if ino is None:
                raise _error(errno.ENOENT)
            if self.inodes[ino].is_dir:
                raise _error(errno.EISDIR)
            self._unlink(parent, name)
            self._entries_changed(parent)

    def rmdir(self, path):
        """Removes an empty directory."""
        with self.lock:
            self._count("rmdir")
            parent, name = self._parent(path)
            ino = parent.entries.get(name)
            if ino is None:
                raise _error(errno.ENOENT)
            node = self.inodes[ino]
            if not node.is_dir:
                raise _error(errno.ENOTDIR)
            if node.entries:
                raise _error(errno.ENOTEMPTY)
            self._unlink(parent, name)
            self._entries_changed(parent)

    def rename(self, old, new):
        """rename(2), over an existing target too; atomic for readers, and durable as a
        whole (ext4: at once; posix: when a directory it touched is synced)."""
        with self.lock:
            self._count("rename")
            src_dir, src_name = self._parent(old)
            dst_dir, dst_name = self._parent(new)
            ino = src_dir.entries.get(src_name)
            if ino is None:
                raise _error(errno.ENOENT)
            node = self.inodes[ino]
            if node.is_dir:
                # A directory may not move into itself or below itself.
                probe = new.rstrip("/") + "/"
                if probe.startswith(old.rstrip("/") + "/"):
                    raise _error(errno.EINVAL)
            replaced = dst_dir.entries.get(dst_name)
            if replaced == ino:
                return  # same inode: rename(2) does nothing
            if replaced is not None:
                target = self.inodes[replaced]
                if target.is_dir and not node.is_dir:
                    raise _error(errno.EISDIR)
                if node.is_dir and not target.is_dir:
                    raise _error(errno.ENOTDIR)
                if target.is_dir and target.entries:
                    raise _error(errno.ENOTEMPTY)
                self._unlink(dst_dir, dst_name)
            self._unlink(src_dir, src_name)
            self._link(dst_dir, dst_name, node)
            node.ctime = time.time_ns()
            if self.mode == POSIX and src_dir is not dst_dir:
                self.renames.append((src_dir.ino, src_name, dst_dir.ino, dst_name, ino))
            self._entries_changed(src_dir, dst_dir)

    def chmod(self, path, mode, fh=None):
        """Changes permission bits (metadata: not modelled as volatile)."""
        with self.lock:
            node = self._node(path, fh)
            node.mode = stat.S_IFMT(node.mode) | (mode & 0o7777)
            node.ctime = time.time_ns()

    def chown(self, path, uid, gid, fh=None):
        """Changes owners; -1 keeps one."""
        with self.lock:
            node = self._node(path, fh)
            if uid != -1:
                node.uid = uid
            if gid != -1:
                node.gid = gid
            node.ctime = time.time_ns()

    def utimens(self, path, times=None, fh=None):
        """Sets access and modification times (ns); None means now."""
        with self.lock:
            node = self._node(path, fh)
            now = time.time_ns()
            atime, mtime = times if times is not None else (now, now)
            node.atime, node.mtime, node.ctime = atime, mtime, now

    def fsync(self, path, fh=None):
        """Makes a file's current bytes (and size) durable."""
        with self.lock:
            node = self._node(path, fh)
            self._count("fsync")
            if self._dropped("fsync", self.drop_fsync, node, path):
                return
            if node.is_file:
                node.durable_data = bytes(node.data)
            elif node.is_dir:
                # fsync(2) of a directory opened as a file: the kernel sends fsyncdir for
                # directories, but be generous if a caller gets here another way.
                self._sync_dir(node)

    def fsyncdir(self, path, fh=None):
        """Makes a directory's current entries durable (what posix mode waits for)."""
        with self.lock:
            node = self._node(path, fh)
            self._count("fsyncdir")
            if self._dropped("fsyncdir", self.drop_fsyncdir, node, path):
                return
            if not node.is_dir:
                raise _error(errno.ENOTDIR)
            self._sync_dir(node)

    def _sync_dir(self, node):
        node.durable_entries = dict(node.entries)
        pending = []
        for rename in self.renames:
            src, src_name, dst, dst_name, ino = rename
            if node.ino not in (src, dst):
                pending.append(rename)
                continue
            # The other side of the rename becomes durable with this one (this side's
            # current entries, later changes included, were just copied).
            other = self.inodes.get(dst if node.ino == src else src)
            if other is None or other is node:
                continue
            if other.ino == src and other.durable_entries.get(src_name) == ino:
                del other.durable_entries[src_name]
            elif other.ino == dst:
                other.durable_entries[dst_name] = ino
        self.renames = pending

    def statfs(self):
        """Sizes for statvfs(2): plenty of room, counted in 4 KiB blocks."""
        with self.lock:
            used = sum(len(n.data) for n in self.inodes.values() if n.is_file) // BLOCK
            total = 1 << 22  # 16 GiB
            return {
                "f_bsize": BLOCK, "f_frsize": BLOCK, "f_blocks": total,
                "f_bfree": total - used, "f_bavail": total - used, "f_files": 1 << 20,
                "f_ffree": (1 << 20) - len(self.inodes), "f_favail": (1 << 20) - len(self.inodes),
                "f_namemax": NAME_MAX,
            }

    # -- power ---------------------------------------------------------------------------

    def cut(self):
        """Power loss: everything not durable is gone. Returns what was lost, for the
        test's report: files whose bytes reverted, directories whose entries did, and
        how many inodes became unreachable."""
        with self.lock:
            # Reported by the names they have after the cut; what no durable entry
            # reaches is only counted (removed temporary files and such).
            durable_paths = self._paths(durable=True)
            files, dirs = [], []
            for node in self.inodes.values():
                where = durable_paths.get(node.ino)
                if node.is_file and bytes(node.data) != node.durable_data:
                    if where is not None:
                        files.append({"path": where, "now": len(node.data),
                                      "durable": len(node.durable_data)})
                    node.data = bytearray(node.durable_data)
                if node.is_dir and node.entries != node.durable_entries:
                    if where is not None:
                        gone = sorted(n for n, i in node.entries.items()
                                      if node.durable_entries.get(n) != i)
                        back = sorted(n for n, i in node.durable_entries.items()
                                      if node.entries.get(n) != i)
                        dirs.append({"path": where, "gone": gone, "back": back})
                    node.entries = dict(node.durable_entries)
            self.renames = []
            self.handles.clear()
            dropped = self._collect()
            return {"files": sorted(files, key=lambda f: f["path"]),
                    "dirs": sorted(dirs, key=lambda d: d["path"]), "dropped": dropped}

    def collect(self):
        """Drops inodes that neither the current nor the durable entries reach and no
        handle holds (after an unmount no handle is open)."""
        with self.lock:
            return self._collect()

    def _collect(self):
        # Follow current and durable entries together: a directory reachable only now
        # may durably hold a file it no longer lists, and a sync of its parent later
        # would make that file reachable again.
        keep = {ROOT_INO}
        todo = [ROOT_INO]
        while todo:
            node = self.inodes[todo.pop()]
            for ino in list(node.entries.values()) + list(node.durable_entries.values()):
                if ino not in keep and ino in self.inodes:
                    keep.add(ino)
                    if self.inodes[ino].is_dir:
                        todo.append(ino)
        keep |= set(self.handles.values())
        dropped = [ino for ino in self.inodes if ino not in keep]
        for ino in dropped:
            del self.inodes[ino]
        # Recount links from the current entries (a cut replaced them wholesale).
        for node in self.inodes.values():
            node.links = 0
        self.inodes[ROOT_INO].links = 1
        for node in self.inodes.values():
            if node.is_dir:
                for ino in node.entries.values():
                    self.inodes[ino].links += 1
        return len(dropped)

    # -- statistics ----------------------------------------------------------------------

    @staticmethod
    def _new_stats():
        return {"ops": {}, "fsync": {}, "fsyncdir": {}, "bytes_written": 0}

    def _count(self, op):
        ops = self.stats["ops"]
        ops[op] = ops.get(op, 0) + 1

    def _dropped(self, kind, drop, node, path):
        """Counts a sync by path; True when `drop` says to ignore it."""
        if path is None:
            path = self._paths().get(node.ino, "<unlinked>")
        counts = self.stats[kind]
        counts[path] = counts.get(path, 0) + 1
        if drop is not None and drop.search(path):
            self._count(f"{kind} dropped")
            return True
        return False

    def take_stats(self):
        """The operations counted since the last call (one mount, for the daemon)."""
        with self.lock:
            stats, self.stats = self.stats, self._new_stats()
            return stats

    def listing(self):
        """Every reachable path now, with size, and with the durable size of files: for
        diagnostics."""
        with self.lock:
            out = {}
            for ino, path in self._paths().items():
                node = self.inodes[ino]
                if node.is_file:
                    out[path] = {"size": len(node.data), "durable": len(node.durable_data)}
                elif node.is_dir:
                    out[path] = {"dir": True,
                                 "durable_entries": sorted(node.durable_entries)}
            return out
