# SPDX-License-Identifier: LGPL-2.1-or-later
"""The exceptions of syncmem beyond Python's own.

Every failure of the library becomes a Python exception: ValueError for bad
arguments (a misaligned offset, an object outside its region), TimeoutError,
FileNotFoundError, PermissionError, FileExistsError... (the OSError subclass
Python picks for the errno), OSError with .errno otherwise, and these two.
"""


class ModuleNotLoadedError(OSError):
    """/dev/syncmem is missing: the syncmem kernel module is not loaded.

    errno is ENODEV. Load the module (``modprobe syncmem``) or give the
    process access to the device.
    """


class OwnerDiedError(OSError):
    """The lock was acquired, but its previous holder died holding it.

    The caller holds the lock now (errno EOWNERDEAD), and the state the lock
    guards may be half-written. Repair it, then call :meth:`consistent` and
    :meth:`release` (or release without consistent: every later acquisition
    then fails with ENOTRECOVERABLE). ``lock`` is the lock::

        try:
            with lock:
                update()
        except syncmem.OwnerDiedError as died:
            repair()
            died.consistent()
            died.release()
    """

    lock = None

    def consistent(self):
        """Mark the repaired state consistent: the lock goes on as normal."""
        self.lock.consistent()

    def release(self):
        """Release the lock that this exception says the caller holds."""
        self.lock.release()
