"""Where in a JSON file a problem is: the line and column of each key (``locate.py``) and pydantic's
errors said at their place (``problems.py``). Below ``policy/`` and ``directory/``, which both read
files a person wrote and name the line that is wrong."""
