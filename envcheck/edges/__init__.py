"""The process's own I/O, at the edge: the files a user names, the standard streams, the ending
signals, the progress display's events, the drift baseline's file.
"""
