#!/bin/sh
# Ask a running spx node who we are and where we are, with the stock aws CLI
# and the profile `spx admin init` wrote.
#   examples/whoami.sh NODE_ROOT
set -eu
root=${1:?usage: whoami.sh NODE_ROOT}
# The node's own CA is in the profile (ca_bundle); a CA bundle in the
# environment would override it.
unset AWS_CA_BUNDLE REQUESTS_CA_BUNDLE
export AWS_SHARED_CREDENTIALS_FILE="$root/aws/credentials"
export AWS_CONFIG_FILE="$root/aws/config"
export AWS_PROFILE=spx AWS_PAGER=""
port=$(sed -n 's/^ec2_port = //p' "$root/spinifex.toml")
scheme=https
grep -q '^http = true' "$root/spinifex.toml" && scheme=http
ep="$scheme://127.0.0.1:$port"
aws --endpoint-url "$ep" sts get-caller-identity --query Arn --output text
aws --endpoint-url "$ep" ec2 describe-regions --query 'Regions[].RegionName' --output text
aws --endpoint-url "$ep" ec2 describe-availability-zones \
	--query 'AvailabilityZones[].[ZoneName,ZoneId,State]' --output text
