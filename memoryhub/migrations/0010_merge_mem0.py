# The two 0008s were written on branches at the same time (mem0's fact metadata, and the
# dashboard's waiting conversations then usage days); this joins them, so a database that
# applied either first migrates the same way.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('memoryhub', '0008_fact_metadata_mem0'),
        ('memoryhub', '0009_usage_days_admin'),
    ]

    operations = []
