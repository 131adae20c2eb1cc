# Per-tenant public ids for events and webhook deliveries (issue 17): ``seq`` from a
# counter row per tenant, instead of ``id`` from one sequence shared by every tenant.

import django.db.models.deletion
import django.db.models.manager
from django.db import migrations, models

import tenants.rls

# Existing rows keep their id as their number, so every cursor and delivery id a consumer
# holds stays valid; each tenant's counter starts at the shared sequence's last value, so its
# next number is above every id given so far (deleted ones included). The owner role runs
# migrations and is subject to the tables' forced row-level security: lifted for the backfill,
# inside this migration's transaction (the ALTERs lock the tables until it commits).
BACKFILL = """
ALTER TABLE memoryhub_memoryevent NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memoryhub_webhookdelivery NO FORCE ROW LEVEL SECURITY;
UPDATE memoryhub_memoryevent SET seq = id;
UPDATE memoryhub_webhookdelivery SET seq = id;
INSERT INTO memoryhub_eventfeed (tenant_id, last_event, last_delivery)
SELECT tenant.id,
    COALESCE(pg_sequence_last_value(
        pg_get_serial_sequence('memoryhub_memoryevent', 'id')::regclass), 0),
    COALESCE(pg_sequence_last_value(
        pg_get_serial_sequence('memoryhub_webhookdelivery', 'id')::regclass), 0)
FROM tenants_tenant tenant;
ALTER TABLE memoryhub_memoryevent FORCE ROW LEVEL SECURITY;
ALTER TABLE memoryhub_webhookdelivery FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('memoryhub', '0010_fact_metadata_mem0'),
        ('tenants', '0004_apikey_user_id'),
    ]

    operations = [
        migrations.AddField(
            model_name='memoryevent',
            name='seq',
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name='webhookdelivery',
            name='seq',
            field=models.BigIntegerField(null=True),
        ),
        migrations.CreateModel(
            name='EventFeed',
            fields=[
                ('tenant', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to='tenants.tenant')),
                ('last_event', models.BigIntegerField(default=0)),
                ('last_delivery', models.BigIntegerField(default=0)),
            ],
            options={
                'abstract': False,
                'base_manager_name': 'unscoped_objects',
                'default_manager_name': 'objects',
                'constraints': [tenants.rls.TenantRowLevelSecurity(name='eventfeed_rls')],
            },
            managers=[
                ('objects', django.db.models.manager.Manager()),
                ('unscoped_objects', django.db.models.manager.Manager()),
            ],
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name='memoryevent',
            name='seq',
            field=models.BigIntegerField(),
        ),
        migrations.AlterField(
            model_name='webhookdelivery',
            name='seq',
            field=models.BigIntegerField(),
        ),
        migrations.RemoveIndex(
            model_name='memoryevent',
            name='event_tenant_cursor',
        ),
        migrations.RemoveIndex(
            model_name='memoryevent',
            name='event_tenant_user',
        ),
        migrations.AddIndex(
            model_name='memoryevent',
            index=models.Index(fields=['tenant', 'user_id', 'seq'], name='event_tenant_user_seq'),
        ),
        migrations.AddConstraint(
            model_name='memoryevent',
            constraint=models.UniqueConstraint(fields=('tenant', 'seq'), name='event_tenant_seq'),
        ),
        migrations.AddConstraint(
            model_name='webhookdelivery',
            constraint=models.UniqueConstraint(fields=('tenant', 'seq'), name='delivery_tenant_seq'),
        ),
    ]
