"""No memory models in the Django admin, on purpose.

End users, documents, events and the rest are tenant-owned: an admin changelist has no
tenant context, so their fail-closed managers raise and RLS hides every row. Platform staff
see per-tenant counts on the Tenant admin (tenants/admin.py), which reads them inside each
tenant's context. People's memory is read by the people themselves, on their own page.
"""
