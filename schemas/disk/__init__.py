"""What reverie writes to disk, standard library only (the hook imports it): files written
durably and for the user alone, private directories, and the lock one writer holds (files.py)."""
