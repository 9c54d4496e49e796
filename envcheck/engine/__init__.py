"""The container engine, through the docker SDK: its connection and its errors, in one place."""
