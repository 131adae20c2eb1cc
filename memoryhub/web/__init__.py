"""Server-rendered pages: the person's memory page, the tenant admin dashboard, sign-in.

Django templates with HTMX partials (django-template-partials), no front-end build step.
A request's path is: middleware (CSP, portal fence) -> an access decorator that resolves the
tenant or end user and enters ``tenant_context`` -> one service or selector -> a template.
"""
