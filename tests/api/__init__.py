"""The API, white-box: each endpoint through HTTP, checked against the database it wrote."""
